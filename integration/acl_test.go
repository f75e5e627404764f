package integration

// ACLs against a real `spool node` process over SASL_SSL + SCRAM-SHA-512,
// set with the `spool acl` CLI: a topic with an ACL for carol is refused
// to mallory by every client with Kafka's TOPIC_AUTHORIZATION_FAILED and
// no record, while carol (allowed by the ACL) and alice (a super user)
// still produce and read.

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spool-log/spool/internal/saslclients"
	"github.com/spool-log/spool/internal/testcerts"
)

var aclPasswords = map[string]string{"alice": "alice-acl-pw", "carol": "carol-acl-pw", "mallory": "mallory-acl-pw"}

// startACLNode is startSecureNode with three users, alice a super user,
// and a topic holding five records, on which carol alone (beside alice)
// may READ and WRITE.
func startACLNode(t *testing.T) (*secureNode, string) {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "spool-acl-ca")
	certFile, keyFile := ca.Server(t, "spool-node").Write(t, dir, "server")
	var users string
	for _, u := range []string{"alice", "carol", "mallory"} {
		line, err := Spool(t, aclPasswords[u]+"\n", "user", "hash", u, "--mechanism", "SCRAM-SHA-512")
		if err != nil {
			t.Fatalf("spool user hash: %v\n%s", err, line)
		}
		users += line
	}
	usersFile := filepath.Join(dir, "users")
	if err := os.WriteFile(usersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	external := freeAddr(t)
	n := StartNode(t, withQuickGroups, WithArgs(
		"--listener", "EXTERNAL=SASL_SSL://"+external,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--sasl-mechanisms", "SCRAM-SHA-512", "--sasl-credentials-file", usersFile,
		"--super-users", "User:alice"))
	s := &secureNode{Node: n, External: external, CAFile: ca.WriteCA(t, dir, "ca"), ca: ca}

	topic := randomTopic("acl")
	alice := aclFranz(t, s, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(alice).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("alice creates %s: %v", topic, err)
	}
	for _, v := range secureValues("alice", 5) {
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("alice produces: %v", err)
		}
	}
	// The CLI, over SASL_SSL as alice: she may, being a super user.
	cli := []string{"--brokers", external, "--tls", "--tls-ca-file", s.CAFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "alice", "--timeout", "10s"}
	t.Setenv("SPOOL_SASL_PASSWORD", aclPasswords["alice"])
	if out, err := Spool(t, "", append([]string{"acl", "add", "--principal", "User:carol", "--operation", "read,write", "--topic", topic}, cli...)...); err != nil {
		t.Fatalf("spool acl add: %v\n%s", err, out)
	}
	if out, err := Spool(t, "", append([]string{"acl", "list", "--topic", topic}, cli...)...); err != nil || strings.Count(out, "User:carol") != 2 {
		t.Fatalf("spool acl list: %v\n%s", err, out)
	}
	// Once the cluster has ACLs, what no ACL allows is denied (Kafka's
	// default): carol's consumer groups need one of their own.
	if out, err := Spool(t, "", append([]string{"acl", "add", "--principal", "User:carol", "--operation", "read", "--group", "carol-group-", "--pattern", "prefixed"}, cli...)...); err != nil {
		t.Fatalf("spool acl add (carol's groups): %v\n%s", err, out)
	}
	return s, topic
}

func aclFranz(t *testing.T, s *secureNode, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(s.External), kgo.DialTLSConfig(s.tls()),
		kgo.SASL(scram.Auth{User: user, Pass: aclPasswords[user]}.AsSha512Mechanism()),
		kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestACLDenialFranz(t *testing.T) {
	s, topic := startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mallory := aclFranz(t, s, "mallory", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err := mallory.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("m")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("franz-go mallory produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	pollCtx, pollCancel := context.WithTimeout(ctx, 5*time.Second)
	fs := mallory.PollFetches(pollCtx)
	pollCancel()
	denied := false
	fs.EachError(func(_ string, _ int32, err error) { denied = denied || errors.Is(err, kerr.TopicAuthorizationFailed) })
	if fs.NumRecords() != 0 || !denied {
		t.Errorf("franz-go mallory fetch: %d records, errors %v; want none and TOPIC_AUTHORIZATION_FAILED", fs.NumRecords(), fs.Errors())
	}

	carol := aclFranz(t, s, "carol", kgo.ConsumeTopics(topic), kgo.ConsumerGroup(randomTopic("carol-group")),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := carol.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("carol")}).FirstErr(); err != nil {
		t.Fatalf("franz-go carol produce: %v", err)
	}
	got := 0
	for got < 6 && ctx.Err() == nil {
		fs := carol.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("franz-go carol group read: %v", err)
		}
		got += fs.NumRecords()
	}
	if got != 6 {
		t.Fatalf("franz-go carol read %d of 6", got)
	}
}

func TestACLDenialSarama(t *testing.T) {
	s, topic := startACLNode(t)
	cfg := func(user string) *sarama.Config {
		c := secureSaramaConfig(s, aclPasswords[user], sarama.SASLHandshakeV1)
		c.Net.SASL.User = user
		c.Metadata.Retry.Max = 1
		c.Producer.Retry.Max = 1
		return c
	}
	if p, err := sarama.NewSyncProducer([]string{s.External}, cfg("mallory")); err != nil {
		t.Fatalf("sarama mallory producer: %v", err)
	} else {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("m")})
		if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			t.Errorf("sarama mallory produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		p.Close()
	}
	c, err := sarama.NewConsumer([]string{s.External}, cfg("mallory"))
	if err != nil {
		t.Fatalf("sarama mallory consumer: %v", err)
	}
	if pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest); err == nil {
		select {
		case m := <-pc.Messages():
			t.Errorf("sarama mallory read %q", m.Value)
		case <-time.After(3 * time.Second):
		}
		pc.Close()
		t.Error("sarama mallory consumed the topic without an error")
	} else if !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Errorf("sarama mallory consume: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	c.Close()

	p, err := sarama.NewSyncProducer([]string{s.External}, cfg("carol"))
	if err != nil {
		t.Fatalf("sarama carol producer: %v", err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("carol")}); err != nil {
		t.Fatalf("sarama carol produce: %v", err)
	}
}

func TestACLDenialKafkaGo(t *testing.T) {
	s, topic := startACLNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transport := func(user string) *kafka.Transport {
		return &kafka.Transport{TLS: s.tls(), SASL: saslclients.KafkaGoSCRAM512(user, aclPasswords[user])}
	}
	dialer := &kafka.Dialer{Timeout: 5 * time.Second, TLS: s.tls(), SASLMechanism: saslclients.KafkaGoSCRAM512("mallory", aclPasswords["mallory"])}
	// kafka-go's Writer and Reader learn topics from an all-topics
	// Metadata, where an unauthorized topic is absent (as on Kafka), and
	// call it unknown; its connection API asks for the topic itself.
	if conn, err := dialer.DialLeader(ctx, "tcp", s.External, topic, 0); err == nil {
		conn.Close()
		t.Error("kafka-go mallory found the topic's leader")
	} else if !errors.Is(err, kafka.TopicAuthorizationFailed) {
		t.Errorf("kafka-go mallory dial leader: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	host, port, _ := net.SplitHostPort(s.External)
	portNum, _ := strconv.Atoi(port)
	dial := func() *kafka.Conn {
		conn, err := dialer.DialPartition(ctx, "tcp", s.External, kafka.Partition{Topic: topic, ID: 0,
			Leader: kafka.Broker{Host: host, Port: portNum, ID: 1}})
		if err != nil {
			t.Fatalf("kafka-go mallory dial partition: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		return conn
	}
	if _, err := dial().WriteMessages(kafka.Message{Value: []byte("m")}); !errors.Is(err, kafka.TopicAuthorizationFailed) {
		t.Errorf("kafka-go mallory write: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	batch := dial().ReadBatch(1, 1<<20)
	if m, err := batch.ReadMessage(); err == nil {
		t.Errorf("kafka-go mallory read %q", m.Value)
	} else if !errors.Is(err, kafka.TopicAuthorizationFailed) {
		t.Errorf("kafka-go mallory read: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	batch.Close()

	w := &kafka.Writer{Addr: kafka.TCP(s.External), Topic: topic, Transport: transport("carol"), BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte("carol")}); err != nil {
		t.Fatalf("kafka-go carol write: %v", err)
	}
}

func aclKcatArgs(s *secureNode, user string) []string {
	return []string{"-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=" + user, "-X", "sasl.password=" + aclPasswords[user], "-X", "ssl.ca.location=" + s.CAFile}
}

func TestACLDenialKcat(t *testing.T) {
	needKcat(t)
	s, topic := startACLNode(t)
	kcat := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kcat", append(kcatArgs(s.External), args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := kcat("m\n", append([]string{"-P", "-t", topic, "-X", "message.timeout.ms=10000"}, aclKcatArgs(s, "mallory")...)...)
	if err == nil || !strings.Contains(out, "Topic authorization failed") {
		t.Errorf("kcat mallory produce: %v\n%s\nwant Topic authorization failed", err, out)
	}
	out, err = kcat("", append([]string{"-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "value=%s\n"}, aclKcatArgs(s, "mallory")...)...)
	if err == nil || !strings.Contains(out, "Topic authorization failed") || strings.Contains(out, "value=") {
		t.Errorf("kcat mallory consume: %v\n%s\nwant Topic authorization failed and no record", err, out)
	}
	runKcat(t, s.External, "carol\n", append([]string{"-P", "-t", topic}, aclKcatArgs(s, "carol")...)...)
	got := runKcat(t, s.External, "", append([]string{"-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-f", "%s\n"}, aclKcatArgs(s, "carol")...)...)
	if strings.Count(got, "\n") != 6 || !strings.Contains(got, "carol") {
		t.Fatalf("kcat carol read %q, want alice's five and carol's", got)
	}
}

func TestACLDenialKafkajs(t *testing.T) {
	needKafkajs(t)
	s, topic := startACLNode(t)
	env := func(user string) []string {
		return []string{"KAFKAJS_SSL_CA=" + s.CAFile, "KAFKAJS_SASL_MECHANISM=scram-sha-512",
			"KAFKAJS_SASL_USERNAME=" + user, "KAFKAJS_SASL_PASSWORD=" + aclPasswords[user]}
	}
	send := map[string]any{"topic": topic, "compression": "none", "messages": []map[string]any{{"value": "m"}}}
	for command, args := range map[string]any{"produce": send, "offsets": map[string]any{"topic": topic}} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := kafkajsCommand(ctx, s.External, command, args)
		cmd.Env = append(cmd.Env, env("mallory")...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "Not authorized to access topics") {
			t.Errorf("kafkajs mallory %s: %v\n%s\nwant Not authorized to access topics", command, err, out)
		}
	}
	send["messages"] = []map[string]any{{"value": "carol"}}
	var produced any
	runKafkajsEnv(t, s.External, env("carol"), "produce", send, &produced)
	var offsets []jsPartitionOffset
	runKafkajsEnv(t, s.External, env("carol"), "offsets", map[string]any{"topic": topic}, &offsets)
	if len(offsets) != 1 || offsets[0].Offset != "6" {
		t.Fatalf("kafkajs carol offsets %+v, want the end at 6", offsets)
	}
}
