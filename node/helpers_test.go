package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testlog"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/partition"
)

// testConfig is a node on free loopback ports with its data in dir.
func testConfig(t testing.TB, dir string) Config {
	cfg := DefaultConfig()
	cfg.DataDir = dir
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Gossip.BindAddr = "127.0.0.1:0"
	cfg.RaftAddr = "127.0.0.1:0"
	cfg.Gossip.Timings = membership.TimingsFast
	cfg.Topic.Flush = partition.FlushEveryAppend
	// Moves nobody asked for would race what a test checks; the tests of
	// automatic rebalancing turn it on.
	cfg.AutoRebalance = false
	log := logrus.New()
	log.SetOutput(testlog.For(t))
	if testing.Verbose() {
		log.SetOutput(testWriter{t})
		log.SetLevel(logrus.DebugLevel)
	}
	cfg.Logger = log
	return cfg
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// startNode starts a node, waits until it is admitted, and shuts it down
// when the test ends.
func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n := startNodeUnadmitted(t, cfg)
	waitAdmitted(t, n)
	return n
}

// waitAdmitted waits until the cluster has accepted n: Start returns before
// (node/admission), and until then the node closes every Kafka connection,
// which a test's first request would take for a failure on a loaded machine.
func waitAdmitted(t testing.TB, n *Node) {
	t.Helper()
	retry.Run(t, 20*time.Second, n.adm.State)
}

// startNodeUnadmitted starts a node without waiting for its admission.
func startNodeUnadmitted(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("new node: %v", err)
	}
	if err := n.Start(); err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { stopNode(t, n) })
	return n
}

func stopNode(t testing.TB, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func newClient(t testing.TB, n *Node, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(n.KafkaAddr()),
		kgo.RetryTimeout(10 * time.Second),
	}, opts...)...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, n *Node) *kadm.Client {
	return kadm.NewClient(newClient(t, n))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	r, err := adm.CreateTopic(testCtx(t), partitions, 1, configs, topic)
	if err != nil {
		t.Fatalf("create topic %s: %v (%s)", topic, err, r.ErrMessage)
	}
}

// consumeAll reads every record of topic from the start until want records
// arrived or the context ends.
func consumeAll(t testing.TB, n *Node, topic string, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, n, append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, opts...)...)
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), want, topic, ctx.Err())
		}
		fs.EachError(func(t2 string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", t2, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func recordKey(i int) string { return fmt.Sprintf("key-%05d", i) }
func recordValue(i int) string {
	return fmt.Sprintf("value-%05d-%s", i, "padding-to-make-compression-worthwhile")
}
