package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

func TestNodeCommandServesAndStopsGracefully(t *testing.T) {
	dir := t.TempDir()
	kafka, admin := freeAddr(t), freeAddr(t)
	// Flags and their SPOOL_* equivalents mix.
	t.Setenv("SPOOL_DATA_DIR", dir)
	t.Setenv("SPOOL_FLUSH_POLICY", "every-append")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := runCLIContext(ctx, "", "node", "--kafka-addr", kafka, "--admin-addr", admin, "--gossip-addr", "127.0.0.1:0", "--node-id", "7", "--log-level", "warn")
		done <- err
	}()

	retry.Run(t, 20*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("node exited before ready: %v", err)
		default:
		}
		return readyz(admin)
	})

	if _, _, err := runCLI(t, "", "topic", "create", "t1", "--brokers", kafka); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t1-0")); err != nil {
		t.Fatalf("SPOOL_DATA_DIR not used: %v", err)
	}
	out, _, err := runCLI(t, "", "topic", "describe", "t1", "--brokers", kafka)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d", 7)) {
		t.Fatalf("describe should show leader 7: %v\n%s", err, out)
	}

	cancel() // what SIGINT/SIGTERM do
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("graceful stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop")
	}
}

func TestNodeCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"node", "--data-dir", t.TempDir(), "--flush-policy", "sometimes", "--kafka-addr", "127.0.0.1:0", "--admin-addr", ""},
		{"node", "--data-dir", t.TempDir(), "--log-format", "xml", "--kafka-addr", "127.0.0.1:0", "--admin-addr", ""},
	} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("spool %v succeeded", args)
		}
	}
}

// startCLINode runs `spool node` in-process on free loopback ports with
// the given extra arguments, waits until it is ready, and returns its Kafka
// address and a stop function that ends it (as SIGTERM would) and returns
// what it logged.
func startCLINode(t *testing.T, args ...string) (kafka string, stop func() string) {
	t.Helper()
	kafka, admin := freeAddr(t), freeAddr(t)
	dir := t.TempDir() // before the Cleanup below, so removed after the node stops
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		stderr string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		_, stderr, err := runCLIContext(ctx, "", append([]string{"node", "--data-dir", dir,
			"--kafka-addr", kafka, "--admin-addr", admin, "--gossip-addr", "127.0.0.1:0"}, args...)...)
		done <- result{stderr, err}
	}()
	var stopped *result
	stop = func() string {
		t.Helper()
		if stopped == nil {
			cancel()
			select {
			case r := <-done:
				stopped = &r
			case <-time.After(30 * time.Second):
				t.Fatal("node did not stop")
			}
			if stopped.err != nil {
				t.Errorf("spool node: %v", stopped.err)
			}
		}
		return stopped.stderr
	}
	t.Cleanup(func() { stop() })

	retry.Run(t, 20*time.Second, func() error {
		select {
		case r := <-done:
			stopped = &r
			t.Fatalf("node exited before ready: %v\n%s", r.err, r.stderr)
		default:
		}
		return readyz(admin)
	})
	return kafka, stop
}

// readyz is nil once the node with admin address admin says it is ready.
func readyz(admin string) error {
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// TestNodeTopicDefaultFlags checks --retention-ms, --retention-bytes and
// --segment-bytes (the flags nix/module.nix passes) become the defaults a
// new topic reports, and that the topic's own configs still win.
func TestNodeTopicDefaultFlags(t *testing.T) {
	t.Setenv("SPOOL_SEGMENT_BYTES", "1048576") // the environment equivalent
	kafka, _ := startCLINode(t, "--log-level", "warn", "--retention-ms", "3600000", "--retention-bytes", "123456789")
	cl, ctx := cliNodeClient(t, kafka)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "defaults"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("-1")}, "own"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "defaults", "own")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"defaults": {"retention.ms": "3600000", "retention.bytes": "123456789", "segment.bytes": "1048576"},
		"own":      {"retention.ms": "-1", "retention.bytes": "123456789", "segment.bytes": "1048576"},
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe %s: %v", rc.Name, rc.Err)
		}
		got := make(map[string]string)
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for k, v := range want[rc.Name] {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", rc.Name, k, got[k], v)
			}
		}
	}
}

// TestNodeGroupFlags checks the consumer-group flags, and that the
// environment names they replace keep working.
func TestNodeGroupFlags(t *testing.T) {
	t.Setenv("SPOOL_GROUP_MIN_SESSION_TIMEOUT", "100ms")
	kafka, _ := startCLINode(t, "--log-level", "warn", "--offsets-topic-partitions", "3",
		"--group-max-session-timeout", "1s", "--group-initial-rebalance-delay", "0s")
	cl, ctx := cliNodeClient(t, kafka)
	join := func(session time.Duration) int16 {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = "flags"
		req.SessionTimeoutMillis = int32(session.Milliseconds())
		req.RebalanceTimeoutMillis = 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("join group: %v", err)
		}
		return resp.ErrorCode
	}
	// 200ms is below Kafka's 6 s default minimum and 2s above the
	// --group-max-session-timeout given; a first join without a member id
	// is asked to rejoin with the one it is given.
	if got := join(200 * time.Millisecond); got != kerr.MemberIDRequired.Code {
		t.Errorf("session 200ms: error %d, want MEMBER_ID_REQUIRED", got)
	}
	if got := join(2 * time.Second); got != kerr.InvalidSessionTimeout.Code {
		t.Errorf("session 2s: error %d, want INVALID_SESSION_TIMEOUT", got)
	}
	topics, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if td := topics["__consumer_offsets"]; td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("__consumer_offsets: %v, %d partitions, want 3", td.Err, len(td.Partitions))
	}
}

func TestNodeFlagsRefuseBadSettings(t *testing.T) {
	for _, bad := range [][]string{
		{"--retention-ms", "-2"},
		{"--retention-bytes", "-5"},
		{"--segment-bytes", "10"},
		{"--segment-bytes", "4294967296"},
		{"--offsets-topic-partitions", "-1"},
		{"--group-initial-rebalance-delay", "-1s"},
		{"--group-min-session-timeout", "1h", "--group-max-session-timeout", "1m"},
	} {
		args := append([]string{"node", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--admin-addr", "", "--log-level", "warn"}, bad...)
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("spool node %v succeeded", bad)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runCLI(t, "", "--version")
	if err != nil || !strings.HasPrefix(out, "spool version "+version+" (commit ") {
		t.Fatalf("spool --version: %v %q", err, out)
	}
	// The ready line says which build is running.
	_, stop := startCLINode(t, "--log-level", "info", "--log-format", "json")
	logs := stop()
	if !strings.Contains(logs, `"msg":"spool node ready"`) || !strings.Contains(logs, `"version":"`+version+`"`) {
		t.Fatalf("no ready line with version %q in:\n%s", version, logs)
	}
}

// TestVersionStampedByLinker builds the binary the way the Nix package
// does, with -X main.version, and runs it.
func TestVersionStampedByLinker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the spool binary")
	}
	bin := filepath.Join(t.TempDir(), "spool")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "spool version v9.8.7-test (commit ") {
		t.Fatalf("%s --version: %v %q", bin, err, out)
	}
}

// TestNodeRetentionCheckIntervalFlag: with --retention-check-interval short,
// a topic past its retention.bytes loses its oldest segments while the node
// runs, not half a minute later.
func TestNodeRetentionCheckIntervalFlag(t *testing.T) {
	kafka, _ := startCLINode(t, "--log-level", "warn", "--retention-check-interval", "100ms")
	cl, ctx := cliNodeClient(t, kafka, kgo.DefaultProduceTopic("bounded"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
	adm := kadm.NewClient(cl)
	configs := map[string]*string{"retention.bytes": kmsg.StringPtr("65536"), "segment.bytes": kmsg.StringPtr("16384")}
	if _, err := adm.CreateTopic(ctx, 1, 1, configs, "bounded"); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1000) // random, so incompressible: franz-go compresses by default
	rand.Read(value)
	for i := 0; i < 300; i++ { // ~300 KB: many 16 KiB segments past 64 KiB
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	retry.Run(t, 20*time.Second, func() error {
		starts, err := adm.ListStartOffsets(ctx, "bounded")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := starts.Lookup("bounded", 0)
		return retry.Check(ok && o.Err == nil && o.Offset > 0, "no segment deleted by retention yet with a 100 ms check interval")
	})
}

// cliNodeClient is a franz-go client of the node at kafka, closed with the
// test, and a context that ends 20 s from now.
func cliNodeClient(t *testing.T, kafka string, opts ...kgo.Opt) (*kgo.Client, context.Context) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(kafka)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return cl, ctx
}
