package membership

import (
	"bufio"
	"os"
	"strings"
	"sync"
)

// Serf rejoins the members of its snapshot by itself, in a goroutine that
// Create starts: this node's own outgoing join, as much as Join's. A
// refusal during it concerns this node (conflictGuard), and the node must
// not serve before it knows the outcome. Serf tells the outcome only in its
// log, so the agent's bridge of Serf's log watches for the line that ends
// the rejoin (serf.handleRejoin, v0.11: one of the two below, always, once
// the snapshot listed any member).
const (
	serfRejoinedLine   = "serf: Re-joined to previously known node"
	serfRejoinFailLine = "serf: Failed to re-join any previously known node"
)

// rejoin tracks Serf's snapshot rejoin.
type rejoin struct {
	once sync.Once
	done chan struct{}
}

func newRejoin() *rejoin { return &rejoin{done: make(chan struct{})} }

func (r *rejoin) finish() { r.once.Do(func() { close(r.done) }) }

// snapshotRejoins tells whether Serf will rejoin from the snapshot at path:
// it replays the snapshot's "alive: NAME ADDR" and "not-alive: NAME" lines
// as Serf does (a "leave" is ignored, as RejoinAfterLeave is set) and
// rejoins when any member is left alive, itself included (Serf then skips
// itself and logs the failure line).
func snapshotRejoins(path string) (bool, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	alive := map[string]bool{}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // Serf ignores a last line without its newline too
		}
		line = line[:len(line)-1]
		if info, ok := strings.CutPrefix(line, "alive: "); ok {
			if i := strings.LastIndex(info, " "); i >= 0 {
				alive[info[:i]] = true
			}
		} else if name, ok := strings.CutPrefix(line, "not-alive: "); ok {
			delete(alive, name)
		}
	}
	return len(alive) > 0, nil
}

// watchSerfLog is the hook on Serf's log lines.
func (a *Agent) watchSerfLog(msg string) {
	if strings.HasPrefix(msg, serfRejoinedLine) || strings.HasPrefix(msg, serfRejoinFailLine) {
		a.guard.endOutgoing()
		a.rejoin.finish()
	}
}

// Rejoined is closed once Serf's rejoin of the snapshot's members is over
// (at once when there is none to do). Refusal then tells whether the
// cluster refused this node.
func (a *Agent) Rejoined() <-chan struct{} { return a.rejoin.done }

// Refusal is the latest refusal of this node by the cluster (its broker id
// or name belongs to another live member), met while this node was joining
// (Join, or Serf's rejoin from its snapshot), or nil.
func (a *Agent) Refusal() error { return a.guard.lastRefusal() }
