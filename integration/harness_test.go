// Package integration starts real `spool` processes on loopback and drives them
// with real Kafka clients, faults included. TestMain builds the binary once.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/testports"
)

// spoolBin is the binary under test, built by TestMain from ../cmd/spool.
var spoolBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "spool-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	spoolBin = filepath.Join(dir, "spool")
	build := exec.Command("go", "build", "-o", spoolBin, "./cmd/spool")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "integration: go build ./cmd/spool failed:", err)
		return 1
	}
	return m.Run()
}

// Node is one real `spool node` process on loopback.
type Node struct {
	t         testing.TB
	ID        int
	Dir       string
	KafkaAddr string
	AdminAddr string
	// GossipAddr is set for every node; clusters pass it to others' --join.
	GossipAddr string
	// Join lists the gossip addresses given as --join; a restart without
	// them rejoins from the Serf snapshot.
	Join      []string
	ExtraArgs []string
	Env       []string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *lockedBuffer
}

// NodeOption adjusts a node before it first starts.
type NodeOption func(*Node)

// WithArgs appends command-line flags to `spool node`.
func WithArgs(args ...string) NodeOption {
	return func(n *Node) { n.ExtraArgs = append(n.ExtraArgs, args...) }
}

// WithID sets the broker id (default 1).
func WithID(id int) NodeOption { return func(n *Node) { n.ID = id } }

// WithDir reuses a data directory (default: a fresh temp dir).
func WithDir(dir string) NodeOption { return func(n *Node) { n.Dir = dir } }

// StartNode starts a node on free loopback ports with fsync on every append,
// waits until /readyz answers 200, and stops it when the test ends.
func StartNode(t testing.TB, opts ...NodeOption) *Node {
	t.Helper()
	n := newNode(t, opts...)
	n.Start()
	return n
}

// newNode sets up a node with free ports and a temporary data directory
// (unless opts say otherwise), stopped and its log shown on failure at
// cleanup, without starting it.
func newNode(t testing.TB, opts ...NodeOption) *Node {
	t.Helper()
	n := &Node{
		t:          t,
		ID:         1,
		KafkaAddr:  freeAddr(t),
		AdminAddr:  freeAddr(t),
		GossipAddr: freeAddr(t),
		logs:       &lockedBuffer{},
	}
	for _, o := range opts {
		o(n)
	}
	if n.Dir == "" {
		n.Dir = t.TempDir()
	}
	t.Cleanup(func() {
		n.Stop()
		if t.Failed() {
			t.Logf("--- spool node %d log ---\n%s", n.ID, n.Logs())
		}
	})
	return n
}

// Args is the full `spool node` command line for this node.
func (n *Node) Args() []string {
	args := []string{"node",
		"--data-dir", n.Dir,
		"--kafka-addr", n.KafkaAddr,
		"--admin-addr", n.AdminAddr,
		"--gossip-addr", n.GossipAddr,
		"--gossip-timings", "fast",
		"--node-id", strconv.Itoa(n.ID),
		"--flush-policy", "every-append",
		"--log-level", "debug",
	}
	for _, j := range n.Join {
		args = append(args, "--join", j)
	}
	return append(args, n.ExtraArgs...)
}

// Start launches the process (again, after Stop or Kill) and waits for /readyz.
func (n *Node) Start() {
	n.t.Helper()
	n.StartNoWait()
	n.WaitReady(30 * time.Second)
}

// StartNoWait launches the process without waiting for readiness.
func (n *Node) StartNoWait() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		n.t.Fatalf("node %d already running", n.ID)
	}
	cmd := exec.Command(spoolBin, n.Args()...)
	cmd.Env = append(os.Environ(), n.Env...)
	fmt.Fprintf(n.logs, "=== start: spool %v\n", n.Args())
	cmd.Stdout, cmd.Stderr = n.logs, n.logs
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("start spool node %d: %v", n.ID, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	n.cmd, n.done = cmd, done
}

// WaitReady polls /readyz until it answers 200 or the process exits.
func (n *Node) WaitReady(timeout time.Duration) {
	n.t.Helper()
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			n.t.Fatalf("spool node %d exited before it was ready:\n%s", n.ID, n.Logs())
		default:
		}
		resp, err := http.Get("http://" + n.AdminAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Fatalf("spool node %d not ready after %v: %v\n%s", n.ID, timeout, last, n.Logs())
}

// Stop sends SIGTERM and waits for a graceful exit (SIGKILL after 20 s).
func (n *Node) Stop() { n.signal(syscall.SIGTERM, 20*time.Second) }

// Kill sends SIGKILL: a crash, nothing flushed beyond what the node already did.
func (n *Node) Kill() { n.signal(syscall.SIGKILL, 10*time.Second) }

func (n *Node) signal(sig syscall.Signal, wait time.Duration) {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd, n.done = nil, nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(wait):
		n.t.Errorf("spool node %d did not exit %v after %v; killing", n.ID, sig, wait)
		cmd.Process.Kill()
		<-done
	}
	fmt.Fprintf(n.logs, "=== exited after %v: %v\n", sig, cmd.ProcessState)
}

// Running tells whether the process is running (started and not yet stopped).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Logs returns everything the process printed so far, across restarts.
func (n *Node) Logs() string { return n.logs.String() }

// Stats fetches the node's /v1/stats JSON.
func (n *Node) Stats(t testing.TB) map[string]any {
	t.Helper()
	var out map[string]any
	if err := n.getJSON("/v1/stats", &out); err != nil {
		t.Fatalf("stats of node %d: %v", n.ID, err)
	}
	return out
}

func (n *Node) getJSON(path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.AdminAddr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return json.Unmarshal(body, v)
}

// Spool runs the spool CLI with args and returns its combined output.
func Spool(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, spoolBin, args...)
	cmd.Stdin = bytes.NewBufferString(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// freeAddr is a loopback address for a process the test starts, free a
// moment ago, below the kernel's ephemeral range (internal/testports).
func freeAddr(t testing.TB) string { return testports.Free(t) }

// lockedBuffer collects a process's output from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
