package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Startup safety (issue 18 items 2, 3 and 6): one process per data
// directory, a node the cluster refuses never serves, and secrets stay out
// of debug endpoints and logs.

// WaitExit waits up to timeout for the process to end on its own and returns
// its exit code; it fails the test if the process is still running then.
func (n *Node) WaitExit(timeout time.Duration) int {
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
		n.t.Fatalf("spool node %d still running after %v:\n%s", n.ID, timeout, n.Logs())
	}
	n.mu.Lock()
	n.cmd, n.done = nil, nil
	n.mu.Unlock()
	fmt.Fprintf(n.logs, "=== exited: %v\n", cmd.ProcessState)
	return cmd.ProcessState.ExitCode()
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
