package node

// Client quotas through sarama's ClusterAdmin and kafka-go's Client, each
// with its own encoding of DescribeClientQuotas and AlterClientQuotas.

import (
	"context"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafka "github.com/segmentio/kafka-go"
)

func TestClientQuotasSarama(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V4_0_0_0
	adm, err := sarama.NewClusterAdmin([]string{n.KafkaAddr()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	entity := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Name: "sarama-user"},
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchDefault}}
	if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "producer_byte_rate", Value: 4096}, true); err != nil {
		t.Fatalf("validate only: %v", err)
	}
	filter := []sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Match: "sarama-user"}}
	if got, err := adm.DescribeClientQuotas(filter, false); err != nil || len(got) != 0 {
		t.Fatalf("after validate only: %v %+v", err, got)
	}
	if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "producer_byte_rate", Value: 4096}, false); err != nil {
		t.Fatalf("alter: %v", err)
	}
	got, err := adm.DescribeClientQuotas(filter, false)
	if err != nil || len(got) != 1 || got[0].Values["producer_byte_rate"] != 4096 || len(got[0].Entity) != 2 ||
		got[0].Entity[1].EntityType != sarama.QuotaEntityClientID || got[0].Entity[1].MatchType != sarama.QuotaMatchDefault {
		t.Fatalf("describe: %v %+v", err, got)
	}
	if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "bogus", Value: 1}, false); err == nil {
		t.Error("an unknown key was taken")
	}
	if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "producer_byte_rate", Remove: true}, false); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if got, err := adm.DescribeClientQuotas(filter, false); err != nil || len(got) != 0 {
		t.Fatalf("after remove: %v %+v", err, got)
	}

	// sarama's own TestFuncAdminQuotas, step by step: nothing at first,
	// the default user's quota, then a user and client id's, strictly.
	if got, err := adm.DescribeClientQuotas(nil, false); err != nil || len(got) != 0 {
		t.Fatalf("describe all: %v %+v, want none", err, got)
	}
	defaultUser := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchDefault}}
	if err := adm.AlterClientQuotas(defaultUser, sarama.ClientQuotasOp{Key: "producer_byte_rate", Value: 1024000}, false); err != nil {
		t.Fatal(err)
	}
	got, err = adm.DescribeClientQuotas([]sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchDefault}}, false)
	if err != nil || len(got) != 1 {
		t.Fatalf("describe the default user: %v %+v", err, got)
	}
	userClient := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Name: "sarama"},
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Name: "sarama-consumer"}}
	if err := adm.AlterClientQuotas(userClient, sarama.ClientQuotasOp{Key: "consumer_byte_rate", Value: 2048000}, false); err != nil {
		t.Fatal(err)
	}
	got, err = adm.DescribeClientQuotas([]sarama.QuotaFilterComponent{
		{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Match: "sarama"},
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Match: "sarama-consumer"}}, true)
	if err != nil || len(got) != 1 || got[0].Values["consumer_byte_rate"] != 2048000 {
		t.Fatalf("describe user and client id strictly: %v %+v", err, got)
	}
	if err := adm.AlterClientQuotas(defaultUser, sarama.ClientQuotasOp{Key: "producer_byte_rate", Remove: true}, false); err != nil {
		t.Fatal(err)
	}
	if err := adm.AlterClientQuotas(userClient, sarama.ClientQuotasOp{Key: "consumer_byte_rate", Remove: true}, false); err != nil {
		t.Fatal(err)
	}
	if got, err := adm.DescribeClientQuotas(nil, false); err != nil || len(got) != 0 {
		t.Fatalf("describe all at the end: %v %+v, want none", err, got)
	}
}

func TestClientQuotasKafkaGo(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	cl := &kafka.Client{Addr: kafka.TCP(n.KafkaAddr()), Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ares, err := cl.AlterClientQuotas(ctx, &kafka.AlterClientQuotasRequest{Entries: []kafka.AlterClientQuotaEntry{{
		Entities: []kafka.AlterClientQuotaEntity{{EntityType: "client-id", EntityName: "kafka-go"}},
		Ops:      []kafka.AlterClientQuotaOps{{Key: "consumer_byte_rate", Value: 2048}},
	}}})
	if err != nil || len(ares.Entries) != 1 || ares.Entries[0].Error != nil {
		t.Fatalf("alter: %v %+v", err, ares)
	}
	dres, err := cl.DescribeClientQuotas(ctx, &kafka.DescribeClientQuotasRequest{
		Components: []kafka.DescribeClientQuotasRequestComponent{{EntityType: "client-id", MatchType: 0, Match: "kafka-go"}}})
	if err != nil || dres.Error != nil || len(dres.Entries) != 1 || len(dres.Entries[0].Values) != 1 ||
		dres.Entries[0].Values[0].Key != "consumer_byte_rate" || dres.Entries[0].Values[0].Value != 2048 {
		t.Fatalf("describe: %v %+v", err, dres)
	}
}
