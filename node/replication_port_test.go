package node

import (
	"net"
	"testing"
)

// TestRaftPortKeptAcrossRestart: a node whose Raft port is left free binds
// its last run's port again, and another one when that port is taken.
func TestRaftPortKeptAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, testConfig(t, dir))
	first := n.repl.Transport().Addr().String()
	stopNode(t, n)

	n = startNode(t, testConfig(t, dir))
	if got := n.repl.Transport().Addr().String(); got != first {
		t.Fatalf("restart bound the Raft transport on %s, the last run on %s", got, first)
	}
	stopNode(t, n)

	ln, err := net.Listen("tcp", first) // someone else took the port
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	n = startNode(t, testConfig(t, dir))
	if got := n.repl.Transport().Addr().String(); got == first {
		t.Fatalf("bound %s, which another listener holds", got)
	}
}
