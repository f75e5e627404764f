package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTxnCommands(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	newTxnClient := func(id string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.TransactionalID(id), kgo.DefaultProduceTopic("orders"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	done := newTxnClient("tx-done")
	if _, err := kadm.NewClient(done).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cl  *kgo.Client
		end bool
	}{{done, true}, {newTxnClient("tx-open"), false}} {
		if err := c.cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := c.cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if c.end {
			if err := c.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, _, err := runCLI(t, "", append([]string{"txn", "list"}, b...)...)
	if err != nil {
		t.Fatalf("txn list: %v", err)
	}
	if !strings.Contains(out, "tx-done") || !strings.Contains(out, "tx-open") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("txn list:\n%s", out)
	}
	out, _, err = runCLI(t, "", append([]string{"txn", "list", "--state", "Ongoing"}, b...)...)
	if err != nil || strings.Contains(out, "tx-done") || !strings.Contains(out, "tx-open") {
		t.Fatalf("txn list --state Ongoing (%v):\n%s", err, out)
	}
	out, _, err = runCLI(t, "", append([]string{"txn", "describe", "tx-open", "-o", "json"}, b...)...)
	if err != nil {
		t.Fatalf("txn describe: %v", err)
	}
	var d struct {
		Transactions []struct {
			TransactionalID string             `json:"transactional_id"`
			State           string             `json:"state"`
			Partitions      map[string][]int32 `json:"partitions"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("txn describe -o json: %v\n%s", err, out)
	}
	if len(d.Transactions) != 1 || d.Transactions[0].State != "Ongoing" || len(d.Transactions[0].Partitions["orders"]) != 1 {
		t.Fatalf("txn describe tx-open: %+v", d)
	}
	if _, _, err := runCLI(t, "", append([]string{"txn", "describe", "no-such-id"}, b...)...); err == nil {
		t.Fatal("describing an unknown transactional id succeeded")
	}
}
