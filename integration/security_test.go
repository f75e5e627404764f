package integration

// Every client over TLS + SCRAM against a real `spool node` process with a
// SASL_SSL listener beside its plaintext one: sarama, kafka-go, kcat
// (librdkafka) and kafkajs each produce, consume through a consumer group,
// and get an error for a wrong password while the node keeps serving.
// franz-go's run is node/security_test.go's (in process, with mTLS, PLAIN
// and re-authentication). The CA, the node's certificate and key are made by
// the test in its temporary directory; the users file by `spool user hash`.

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/saslclients"
	"github.com/spool-log/spool/internal/testcerts"
)

const (
	secureUser     = "alice"
	securePassword = "alice-secret-pw"
)

// secureNode is a node process with a SASL_SSL listener at External
// (SCRAM-SHA-256/512 and PLAIN), trusted through CAFile.
type secureNode struct {
	*Node
	External string
	CAFile   string
	ca       *testcerts.CA
}

func startSecureNode(t *testing.T) *secureNode {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "spool-integration-ca")
	certFile, keyFile := ca.Server(t, "spool-node").Write(t, dir, "server")
	users, err := Spool(t, securePassword+"\n", "user", "hash", secureUser)
	if err != nil {
		t.Fatalf("spool user hash: %v\n%s", err, users)
	}
	usersFile := filepath.Join(dir, "users")
	if err := os.WriteFile(usersFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	external := freeAddr(t)
	n := StartNode(t, withQuickGroups, WithArgs(
		"--listener", "EXTERNAL=SASL_SSL://"+external,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--sasl-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
		"--sasl-credentials-file", usersFile))
	return &secureNode{Node: n, External: external, CAFile: ca.WriteCA(t, dir, "ca"), ca: ca}
}

// tls is the client TLS configuration trusting the node's CA.
func (s *secureNode) tls() *tls.Config { return testcerts.ClientConfig(s.ca) }

// createTopic creates a topic through the SASL_SSL listener with franz-go.
func (s *secureNode) createTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.External), kgo.DialTLSConfig(s.tls()),
		kgo.SASL(scram.Auth{User: secureUser, Pass: securePassword}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic %s over SASL_SSL: %v", topic, err)
	}
}

// stillServes checks the node goes on serving a good client.
func (s *secureNode) stillServes(t *testing.T) {
	t.Helper()
	s.createTopic(t, randomTopic("still-serving"), 1)
}

func secureValues(tag string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", tag, i)
	}
	return out
}

// secureSaramaConfig is sarama over TLS + SCRAM-SHA-512, with SaslHandshake
// v1 (SaslAuthenticate) or v0 (raw tokens, sarama's default).
func secureSaramaConfig(s *secureNode, password string, handshake int16) *sarama.Config {
	cfg := saramaConfig("none")
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = s.tls()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Version = handshake
	// sarama refuses ApiVersions before a v0 handshake (its tokens would
	// follow it unframed).
	cfg.ApiVersionsRequest = handshake != sarama.SASLHandshakeV0
	cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
	cfg.Net.SASL.User, cfg.Net.SASL.Password = secureUser, password
	cfg.Net.SASL.SCRAMClientGeneratorFunc = saslclients.SaramaSCRAM(sarama.SASLTypeSCRAMSHA512)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	return cfg
}

// groupCollector is a sarama group handler that collects values.
type groupCollector struct {
	mu     sync.Mutex
	values map[string]bool
}

func (g *groupCollector) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (g *groupCollector) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (g *groupCollector) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		g.mu.Lock()
		g.values[string(m.Value)] = true
		g.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func (g *groupCollector) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.values)
}

func TestSecureSarama(t *testing.T) {
	s := startSecureNode(t)
	topic := randomTopic("sarama-secure")
	s.createTopic(t, topic, 2)
	values := secureValues("sarama", 20)

	// The producer authenticates with raw tokens (SaslHandshake v0), the
	// group with SaslAuthenticate (v1).
	producer, err := sarama.NewSyncProducer([]string{s.External}, secureSaramaConfig(s, securePassword, sarama.SASLHandshakeV0))
	if err != nil {
		t.Fatalf("sarama producer over TLS + SCRAM: %v", err)
	}
	for _, v := range values {
		if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(v), Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatalf("sarama produce: %v", err)
		}
	}
	producer.Close()

	group, err := sarama.NewConsumerGroup([]string{s.External}, randomTopic("sarama-group"), secureSaramaConfig(s, securePassword, sarama.SASLHandshakeV1))
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	defer group.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	collected := &groupCollector{values: map[string]bool{}}
	go func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{topic}, collected); err != nil && ctx.Err() == nil {
				t.Errorf("sarama group consume: %v", err)
				return
			}
		}
	}()
	retry.Run(t, 30*time.Second, func() error {
		if got := collected.count(); got != len(values) {
			return fmt.Errorf("sarama group read %d of %d", got, len(values))
		}
		return nil
	})

	for _, handshake := range []int16{sarama.SASLHandshakeV0, sarama.SASLHandshakeV1} {
		bad := secureSaramaConfig(s, "wrong-password", handshake)
		bad.Metadata.Retry.Max = 0
		if cl, err := sarama.NewClient([]string{s.External}, bad); err == nil {
			cl.Close()
			t.Fatalf("sarama (SaslHandshake v%d) with a wrong password connected", handshake)
		}
	}
	s.stillServes(t)
}

func TestSecureKafkaGo(t *testing.T) {
	s := startSecureNode(t)
	topic := randomTopic("kafkago-secure")
	s.createTopic(t, topic, 2)
	values := secureValues("kafkago", 20)
	mech := saslclients.KafkaGoSCRAM512(secureUser, securePassword)

	w := &kafka.Writer{Addr: kafka.TCP(s.External), Topic: topic, Balancer: &kafka.Hash{},
		Transport: &kafka.Transport{TLS: s.tls(), SASL: mech}, BatchTimeout: 10 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var msgs []kafka.Message
	for _, v := range values {
		msgs = append(msgs, kafka.Message{Key: []byte(v), Value: []byte(v)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("kafka-go write over TLS + SCRAM: %v", err)
	}
	w.Close()

	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{s.External}, GroupID: randomTopic("kafkago-group"), Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond,
		HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, RebalanceTimeout: 5 * time.Second,
		Dialer: &kafka.Dialer{Timeout: 5 * time.Second, TLS: s.tls(), SASLMechanism: mech},
	})
	defer r.Close()
	seen := map[string]bool{}
	for len(seen) < len(values) {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group read (%d of %d): %v", len(seen), len(values), err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("kafka-go commit: %v", err)
		}
		seen[string(m.Value)] = true
	}

	d := &kafka.Dialer{Timeout: 5 * time.Second, TLS: s.tls(), SASLMechanism: saslclients.KafkaGoSCRAM512(secureUser, "wrong-password")}
	if conn, err := d.DialContext(ctx, "tcp", s.External); err == nil {
		conn.Close()
		t.Fatal("kafka-go with a wrong password connected")
	} else if !strings.Contains(err.Error(), "SASL Authentication Failed") && !strings.Contains(err.Error(), "SASL") {
		t.Fatalf("kafka-go with a wrong password: %v", err)
	}
	s.stillServes(t)
}

// kcatSecureArgs are librdkafka's SASL_SSL settings.
func kcatSecureArgs(s *secureNode, password string) []string {
	return []string{
		"-X", "security.protocol=SASL_SSL",
		"-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=" + secureUser,
		"-X", "sasl.password=" + password,
		"-X", "ssl.ca.location=" + s.CAFile,
	}
}

func TestSecureKcat(t *testing.T) {
	needKcat(t)
	s := startSecureNode(t)
	topic := randomTopic("kcat-secure")
	s.createTopic(t, topic, 2)
	values := secureValues("kcat", 20)
	runKcat(t, s.External, strings.Join(values, "\n")+"\n", append([]string{"-P", "-t", topic}, kcatSecureArgs(s, securePassword)...)...)

	args := append(append(kcatGroupArgs(randomTopic("kcat-group")), kcatSecureArgs(s, securePassword)...), "-e", "-f", "%s\n", topic)
	got := strings.Fields(runKcat(t, s.External, "", args...))
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(values, ",") {
		t.Fatalf("kcat group over SASL_SSL read %q, want %q", got, values)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append(append(kcatArgs(s.External), kcatSecureArgs(s, "wrong-password")...), "-L", "-m", "5")...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Authentication failed") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
	}
	s.stillServes(t)
}

func TestSecureKafkajs(t *testing.T) {
	needKafkajs(t)
	s := startSecureNode(t)
	topic := randomTopic("kafkajs-secure")
	s.createTopic(t, topic, 2)
	env := []string{"KAFKAJS_SSL_CA=" + s.CAFile, "KAFKAJS_SASL_MECHANISM=scram-sha-512",
		"KAFKAJS_SASL_USERNAME=" + secureUser, "KAFKAJS_SASL_PASSWORD=" + securePassword}
	msgs := jsMessages("secure", 2, 5, 0, time.Now().Add(-time.Hour).Truncate(time.Second))
	send := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		send[i] = map[string]any{"partition": m.Partition, "key": m.Key, "value": m.Value, "headers": m.Headers, "timestamp": m.Timestamp}
	}
	var produced any
	runKafkajsEnv(t, s.External, env, "produce", map[string]any{"topic": topic, "compression": "none", "messages": send}, &produced)
	var consumed struct {
		Messages []jsMessage `json:"messages"`
	}
	runKafkajsEnv(t, s.External, env, "consume", map[string]any{"group": randomTopic("kafkajs-group"), "topic": topic, "expect": len(msgs), "lingerMs": 0, "autoCommit": true}, &consumed)
	if len(consumed.Messages) != len(msgs) {
		t.Fatalf("kafkajs group over SASL_SSL read %d of %d", len(consumed.Messages), len(msgs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := kafkajsCommand(ctx, s.External, "metadata", map[string]any{"topic": topic})
	cmd.Env = append(cmd.Env, "KAFKAJS_SSL_CA="+s.CAFile, "KAFKAJS_SASL_MECHANISM=scram-sha-512",
		"KAFKAJS_SASL_USERNAME="+secureUser, "KAFKAJS_SASL_PASSWORD=wrong-password")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "SASL") {
		t.Fatalf("kafkajs with a wrong password: %v\n%s", err, out)
	}
	s.stillServes(t)
}
