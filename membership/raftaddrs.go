package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/spool-log/spool/internal/atomicfile"
)

// Replication needs each peer's Raft address, which gossip carries in the
// "raft" tag. After a restart, Serf knows no tag until it has rejoined a
// member (its snapshot keeps names and gossip addresses only), and a rejoin
// can wait: its members' gossip ports unreachable, the seeds down, or the
// snapshot gone. The Raft groups need not wait for it: every Raft address
// seen in gossip is kept in raft-addrs.json, and LastRaftAddr answers from
// it for a broker gossip shows no address for. Peers keep their Raft port
// across restarts (node/replication.go binds the last one again), so the
// file's addresses stay right until an operator moves a node; a wrong one
// costs nothing but a refused dial, since the Raft handshake names the
// broker it means to reach and a listener of another broker refuses it.
//
// It is a hint, not state: written atomically but without an fsync (a
// crash may leave the previous contents), never merged with peers, and
// gossip's address, when there is one, always wins.

const raftAddrsFile = "raft-addrs.json"

// maxRaftAddrsBytes bounds the file read back (an entry is ~60 bytes).
const maxRaftAddrsBytes = 8 << 20

// raftAddrEntry is one broker's last advertised Raft address.
type raftAddrEntry struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// raftAddrBook is the Raft address of every broker id seen in gossip.
// Its mutex guards the map only; saves happen outside it, from Serf's
// event loop (and Create), one at a time.
type raftAddrBook struct {
	path string
	mu   sync.Mutex
	byID map[int32]raftAddrEntry
}

func loadRaftAddrs(path string) (*raftAddrBook, error) {
	b := &raftAddrBook{path: path, byID: map[int32]raftAddrEntry{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(raw) > maxRaftAddrsBytes {
		return b, nil // not ours to trust; rebuilt from gossip
	}
	var byID map[int32]raftAddrEntry
	if err := json.Unmarshal(raw, &byID); err != nil {
		return b, nil // a hint: start over from gossip rather than refuse to start
	}
	for id, e := range byID {
		if e.Addr != "" {
			b.byID[id] = e
		}
	}
	return b, nil
}

// observe records m's Raft address and reports whether the book changed.
func (b *raftAddrBook) observe(id int32, name, addr string) bool {
	if addr == "" {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e := raftAddrEntry{Name: name, Addr: addr}
	if b.byID[id] == e {
		return false
	}
	b.byID[id] = e
	return true
}

func (b *raftAddrBook) lookup(id int32) (raftAddrEntry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byID[id]
	return e, ok
}

// save writes the book; the caller serializes saves.
func (b *raftAddrBook) save() error {
	b.mu.Lock()
	byID := maps.Clone(b.byID)
	b.mu.Unlock()
	raw, err := json.Marshal(byID)
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(b.path, raw, 0o644); err != nil {
		return fmt.Errorf("save raft addresses: %w", err)
	}
	return nil
}

// observeRaftAddr keeps m's Raft address, saving the book when it changed.
// Called from Serf's event loop and from Create, never at once.
func (a *Agent) observeRaftAddr(m Member) {
	if a.raftAddrs.observe(m.BrokerID, m.Name, m.RaftAddr) {
		if err := a.raftAddrs.save(); err != nil {
			a.log.WithError(err).Warn("could not keep the peers' Raft addresses; a restart waits for gossip to learn them")
		}
	}
}

// LastRaftAddr is the Raft address broker id last advertised in gossip,
// kept across restarts, for a broker whose address gossip does not show
// (yet): after a restart, before Serf has rejoined anyone.
func (a *Agent) LastRaftAddr(id int32) (string, bool) {
	e, ok := a.raftAddrs.lookup(id)
	return e.Addr, ok
}

// LastOwnRaftAddr is the Raft address this node (broker id, data dir
// dataDir as in Config) advertised on its last run, if it kept one: so
// that it can bind the same port again before its agent starts, and its
// peers, whose gossip view may still hold its old tags, reach it at once.
func LastOwnRaftAddr(dataDir string, id int32) (string, bool) {
	b, err := loadRaftAddrs(filepath.Join(dataDir, raftAddrsFile))
	if err != nil {
		return "", false
	}
	e, ok := b.lookup(id)
	return e.Addr, ok
}
