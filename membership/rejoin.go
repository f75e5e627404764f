package membership

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
)

// A restarted node rejoins the members its Serf snapshot lists as alive,
// without --join: this node's own outgoing join, as much as Join's. A
// refusal during it concerns this node (conflictGuard), and the node must
// not serve before it knows the outcome (node/admission).
//
// Serf rejoins them by itself too (Create starts serf.handleRejoin), but it
// tells the outcome only in a log line. So the agent runs the rejoin
// itself, as Serf does (the same members, one at a time in random order,
// by name and address, until one answers), through serf.Join, whose return
// is the outcome: Rejoined and RejoinErr report it, and admission depends
// on no log line. Serf's own attempt, which it cannot be told to skip while
// it keeps its snapshot, repeats the same joins; a second push/pull with a
// member is harmless.
//
// The members come from Serf's snapshot file, which Serf itself must read
// back across versions: snapshotMembers replays it as Serf does.

// rejoin is the outcome of the snapshot rejoin.
type rejoin struct {
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	via  string // the member that answered
	err  error
}

func newRejoin() *rejoin { return &rejoin{done: make(chan struct{})} }

func (r *rejoin) finish(via string, err error) {
	r.once.Do(func() {
		r.mu.Lock()
		r.via, r.err = via, err
		r.mu.Unlock()
		close(r.done)
	})
}

func (r *rejoin) outcome() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.via, r.err
}

// snapshotMembers replays the Serf snapshot at path as Serf's Snapshotter
// does (v0.11: "alive: NAME ADDR" adds a member, "not-alive: NAME" removes
// it; a "leave" is ignored, as RejoinAfterLeave is set; a last line without
// its newline is ignored) and returns the members left alive but self,
// name to gossip address.
func snapshotMembers(path, self string) (map[string]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	alive := map[string]string{}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		line = line[:len(line)-1]
		if info, ok := strings.CutPrefix(line, "alive: "); ok {
			if i := strings.LastIndex(info, " "); i >= 0 {
				alive[info[:i]] = info[i+1:]
			}
		} else if name, ok := strings.CutPrefix(line, "not-alive: "); ok {
			delete(alive, name)
		}
	}
	delete(alive, self)
	return alive, nil
}

// rejoinSnapshot joins the members of the snapshot (prev, from
// snapshotMembers) until one answers, the cluster refuses this node, or
// the agent shuts down, then settles Rejoined. The caller has begun the
// guard's outgoing join; this ends it first, so that Refusal is settled
// when Rejoined closes.
func (a *Agent) rejoinSnapshot(prev map[string]string) {
	via, err := a.tryRejoin(prev)
	a.guard.endOutgoing()
	log := a.log.WithField("members", len(prev))
	if err != nil {
		log.WithError(err).Warn("could not rejoin any member of the snapshot")
	} else {
		log.WithField("via", via).Info("rejoined the cluster through a member of the snapshot")
	}
	a.rejoin.finish(via, err)
}

func (a *Agent) tryRejoin(prev map[string]string) (string, error) {
	names := make([]string, 0, len(prev))
	for name := range prev {
		names = append(names, name)
	}
	rand.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	var errs []error
	for _, name := range names {
		if a.isShutdown() {
			return "", errShutdown
		}
		// NAME/ADDR: memberlist checks that the member there is the one
		// the snapshot names, as Serf's rejoin does. Old user events are
		// not ignored: the node's own clocks, restored from the snapshot,
		// skip what it already saw, as with Serf's rejoin.
		n, err := a.serf.Join([]string{name + "/" + prev[name]}, false)
		if n > 0 {
			return name, nil
		}
		if refusal := a.guard.lastRefusal(); refusal != nil {
			return "", fmt.Errorf("rejoin %s: refused: %w", name, refusal)
		}
		if err == nil {
			err = errors.New("no answer")
		}
		a.log.WithError(err).WithFields(logrus.Fields{"member": name, "addr": prev[name]}).Debug("rejoin attempt failed")
		errs = append(errs, fmt.Errorf("%s at %s: %w", name, prev[name], err))
	}
	return "", fmt.Errorf("no member of the snapshot answered: %w", errors.Join(errs...))
}

// Rejoined is closed once the rejoin of the snapshot's members is over (at
// once when there is none to do). Refusal then tells whether the cluster
// refused this node, and RejoinErr whether any member answered.
func (a *Agent) Rejoined() <-chan struct{} { return a.rejoin.done }

// RejoinErr is why the snapshot rejoin reached no member (none answered,
// or the cluster refused this node), nil when one answered or there was
// none to rejoin; it is meaningful once Rejoined is closed.
func (a *Agent) RejoinErr() error {
	_, err := a.rejoin.outcome()
	return err
}

// Refusal is the latest refusal of this node by the cluster (its broker id
// or name belongs to another live member), met while this node was joining
// (Join, or the rejoin from its snapshot), or nil.
func (a *Agent) Refusal() error { return a.guard.lastRefusal() }
