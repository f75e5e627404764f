package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Startup safety (issue 18 items 2, 3 and 6): one process per data
// directory, a node the cluster refuses never serves, and secrets stay out
// of debug endpoints and logs.

// exitRefusedByCluster is the status `spool node` exits with when the
// cluster refuses it (cmd/spool's exitRefused; the NixOS module's
// RestartPreventExitStatus).
const exitRefusedByCluster = 78

// WaitExit waits up to timeout for the process to end on its own and returns
// its exit code; it fails the test if the process is still running then.
func (n *Node) WaitExit(timeout time.Duration) int {
	n.t.Helper()
	code, exited := n.exitWithin(timeout)
	if !exited {
		n.t.Fatalf("spool node %d still running after %v:\n%s", n.ID, timeout, n.Logs())
	}
	return code
}

// exitWithin waits up to timeout for the process to end on its own and
// returns its exit code, or false if it still runs.
func (n *Node) exitWithin(timeout time.Duration) (int, bool) {
	n.t.Helper()
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		n.t.Fatalf("spool node %d is not running", n.ID)
	}
	select {
	case <-done:
	case <-time.After(timeout):
		return 0, false
	}
	n.mu.Lock()
	n.cmd, n.done = nil, nil
	n.mu.Unlock()
	fmt.Fprintf(n.logs, "=== exited: %v\n", cmd.ProcessState)
	return cmd.ProcessState.ExitCode(), true
}

// pid is the running process's id.
func (n *Node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		n.t.Fatalf("spool node %d is not running", n.ID)
	}
	return n.cmd.Process.Pid
}

// TestDataDirLock starts a second real node process on a running node's data
// directory: it must exit at once, non-zero, naming the holder's pid, while
// the first keeps serving what it acknowledged; after a kill -9 of the first
// (the kernel drops the lock) a new process starts on the directory and
// serves the same records.
func TestDataDirLock(t *testing.T) {
	first := StartNode(t)
	topic := uniqueTopic("lock")
	franzCreateTopic(t, first.KafkaAddr, topic, 1)
	recs := makeRecords("lock", 20, time.Now())
	cl := franzClient(t, first.KafkaAddr)
	franzProduce(t, cl, topic, recs, 5)

	// Other ports, same directory: only the lock can stop it.
	second := newNode(t, WithDir(first.Dir), WithID(2))
	second.StartNoWait()
	start := time.Now()
	code := second.WaitExit(15 * time.Second)
	took := time.Since(start)
	if code == 0 {
		t.Fatalf("second process on %s exited 0:\n%s", first.Dir, second.Logs())
	}
	holder := "pid " + strconv.Itoa(first.pid())
	if !strings.Contains(second.Logs(), holder) {
		t.Fatalf("second process's message does not name %q:\n%s", holder, second.Logs())
	}
	t.Logf("MEASURED: second process exited with code %d after %v", code, took.Round(time.Millisecond))

	// The first is untouched: still ready, still serving its records, still
	// accepting writes.
	first.WaitReady(5 * time.Second)
	franzVerifyPartitions(t, first.KafkaAddr, topic, recs)
	more := makeRecords("lock-more", 5, time.Now())
	franzProduce(t, cl, topic, more, 5)
	cl.Close()

	first.Kill()
	third := newNode(t, WithDir(first.Dir), WithID(1))
	third.Start()
	franzVerifyPartitions(t, third.KafkaAddr, topic, append(recs, more...))
}

// TestSecretsNotExposed starts two nodes of an encrypted cluster with the
// gossip key on the command line: pprof is 404 without --enable-pprof; with
// it, /debug/pprof/cmdline has the key redacted; no /v1 endpoint and no log
// line holds the key, and each node warns that a secret came on the command
// line.
func TestSecretsNotExposed(t *testing.T) {
	const key = "Q2hhbmdlTWVDaGFuZ2VNZUNoYW5nZU1lQ2hhbmdlTWU="
	nodes := startCluster(t, 1, WithArgs("--gossip-key", key))
	plain := nodes[0]
	get := func(n *Node, path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + n.AdminAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if code, body := get(plain, path); code != http.StatusNotFound {
			t.Errorf("node without --enable-pprof: GET %s: %d %.200q, want 404", path, code, body)
		}
	}
	profiled := StartNode(t, WithID(2), WithJoin(plain.GossipAddr), WithArgs("--gossip-key="+key, "--enable-pprof"))
	waitMembers(t, profiled, 20*time.Second, func(ms map[int]member) error { return wantStatus(ms, 2, "alive", 1, 2) })
	if code, body := get(profiled, "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("node with --enable-pprof: GET /debug/pprof/: %d %.200q", code, body)
	}
	code, cmdline := get(profiled, "/debug/pprof/cmdline")
	if code != 200 || !strings.Contains(cmdline, "--enable-pprof") || strings.Contains(cmdline, key) {
		t.Errorf("node with --enable-pprof: GET /debug/pprof/cmdline: %d %q", code, cmdline)
	}
	for _, n := range []*Node{plain, profiled} {
		for _, path := range []string{"/v1/stats", "/v1/topics", "/v1/members", "/v1/placement", "/v1/roster", "/healthz", "/readyz", "/metrics"} {
			if _, body := get(n, path); strings.Contains(body, key) {
				t.Errorf("node %d: GET %s shows the gossip key", n.ID, path)
			}
		}
	}
	n := 0
	for _, node := range []*Node{plain, profiled} {
		node.Stop() // the shutdown's lines too
		var warned bool
		for _, line := range strings.Split(node.Logs(), "\n") {
			if strings.HasPrefix(line, "=== ") { // the harness's own lines
				continue
			}
			n++
			if strings.Contains(line, key) {
				t.Errorf("node %d logged the gossip key: %s", node.ID, line)
			}
			if strings.Contains(line, "secret was given on the command line") && strings.Contains(line, "--gossip-key") {
				warned = true
			}
		}
		if !warned {
			t.Errorf("node %d did not warn about the key on its command line:\n%s", node.ID, node.Logs())
		}
	}
	t.Logf("MEASURED: %d log lines of two nodes checked for the key", n)
}

// TestRefusedNodeNeverServes starts a two-node cluster, then a node that
// joins it with a broker id (or a name) a live member already has. While it
// runs, a client keeps producing to it (auto-creating the topic) and /readyz
// is polled: no produce may be acknowledged and /readyz may never say 200.
// The node must exit non-zero with the reason in its log, and the cluster
// must neither know the topic nor have lost the member whose id or name was
// claimed.
func TestRefusedNodeNeverServes(t *testing.T) {
	nodes := startCluster(t, 2)
	for _, tc := range []struct {
		name   string
		id     int
		args   []string
		reason string
	}{
		{"duplicate broker id", 2, []string{"--node-name", "impostor"}, "duplicate broker id"},
		{"duplicate name", 3, []string{"--node-name", "spool-2"}, "duplicate member name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := uniqueTopic("refused")
			dup := newNode(t, WithID(tc.id), WithJoin(nodes[0].GossipAddr), WithArgs(tc.args...))
			dup.StartNoWait()

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var ready200, acked atomic.Int64
			var attempts, probes atomic.Int64
			wg.Add(2)
			go func() { // /readyz, as a load balancer would ask
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := http.Get("http://" + dup.AdminAddr + "/readyz")
					if err == nil {
						if resp.StatusCode == http.StatusOK {
							ready200.Add(1)
						}
						resp.Body.Close()
						probes.Add(1)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			go func() { // a producer bootstrapped with the refused node only
				defer wg.Done()
				cl, err := kgo.NewClient(kgo.SeedBrokers(dup.KafkaAddr), kgo.AllowAutoTopicCreation(),
					kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(2*time.Second))
				if err != nil {
					t.Errorf("franz-go client: %v", err)
					return
				}
				defer cl.Close()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("lost-", i))}).FirstErr()
					cancel()
					attempts.Add(1)
					if err == nil {
						acked.Add(1)
					}
				}
			}()

			code, exited := dup.exitWithin(30 * time.Second)
			close(stop)
			wg.Wait()
			logs := dup.Logs()
			if !exited {
				t.Errorf("the refused node still runs after 30s")
			} else if code != exitRefusedByCluster {
				t.Errorf("the refused node exited %d, not %d (the status a supervisor must not restart)", code, exitRefusedByCluster)
			}
			if n := acked.Load(); n > 0 {
				t.Errorf("the refused node acknowledged %d of %d produces", n, attempts.Load())
			}
			if n := ready200.Load(); n > 0 {
				t.Errorf("the refused node's /readyz said 200 %d times of %d", n, probes.Load())
			}
			if !strings.Contains(logs, "refused by the cluster") || !strings.Contains(logs, tc.reason) {
				t.Errorf("the refused node's log does not give the reason (%q):\n%s", tc.reason, logs)
			}
			t.Logf("MEASURED: refused node exited with code %d; %d produce attempts, %d /readyz probes while it ran", code, attempts.Load(), probes.Load())

			for _, n := range nodes {
				var topics []struct {
					Name string `json:"name"`
				}
				if err := n.getJSON("/v1/topics", &topics); err != nil {
					t.Fatal(err)
				}
				for _, tp := range topics {
					if tp.Name == topic {
						t.Errorf("node %d knows the topic produced to the refused node", n.ID)
					}
				}
				waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
					if err := wantStatus(ms, 2, "alive", 1, 2); err != nil {
						return err
					}
					if ms[2].Name != "spool-2" || ms[2].GossipAddr != nodes[1].GossipAddr {
						return fmt.Errorf("member 2 is %+v", ms[2])
					}
					return nil
				})
				n.WaitReady(5 * time.Second)
			}
		})
	}
}
