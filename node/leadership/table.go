package leadership

import (
	"fmt"
	"sync"
)

// Table is what this node knows of its peers' claims: per claiming
// broker, the incarnation and version it holds and that broker's claims.
// Safe for concurrent use; Lookup is what Metadata calls per partition.
type Table struct {
	mu      sync.RWMutex
	sources map[int32]*source
}

type source struct {
	inc, version uint64
	claims       map[Key]Claim
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{sources: map[int32]*source{}} }

// Lookup returns the winning claim on a partition: the highest epoch among
// the brokers claiming it (a copy the caller may keep).
func (t *Table) Lookup(topic [16]byte, partition int32) (Claim, bool) {
	k := Key{topic, partition}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var best Claim
	found := false
	for _, s := range t.sources {
		if c, ok := s.claims[k]; ok && (!found || c.Epoch > best.Epoch) {
			best, found = c, true
		}
	}
	if !found {
		return Claim{}, false
	}
	return best.clone(), true
}

// held is the incarnation and version of broker's claims the table holds.
func (t *Table) held(broker int32) (inc, version uint64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, ok := t.sources[broker]
	if !ok {
		return 0, 0, false
	}
	return s.inc, s.version, true
}

// Apply takes a message pulled from broker. A full message replaces what
// the table holds of it; a delta must start at the version held of the
// same incarnation, else it is refused (and the caller pulls in full).
func (t *Table) Apply(broker int32, m Message) error {
	if m.Broker != broker {
		return fmt.Errorf("claims of broker %d from broker %d", m.Broker, broker)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sources[broker]
	if !m.Full {
		if s == nil || s.inc != m.Inc || s.version != m.Since {
			return fmt.Errorf("delta of broker %d from version %d does not follow what is held", broker, m.Since)
		}
		for _, k := range m.Removed {
			delete(s.claims, k)
		}
	} else {
		s = &source{claims: make(map[Key]Claim, len(m.Claims))}
		t.sources[broker] = s
	}
	for _, c := range m.Claims {
		c.Leader = broker
		s.claims[c.Key()] = c
	}
	s.inc, s.version = m.Inc, m.Version
	return nil
}

// Drop forgets broker's claims.
func (t *Table) Drop(broker int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sources, broker)
}

// Brokers are the brokers whose claims the table holds.
func (t *Table) Brokers() []int32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]int32, 0, len(t.sources))
	for b := range t.sources {
		out = append(out, b)
	}
	return out
}

// Len is how many claims the table holds, of every broker.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	n := 0
	for _, s := range t.sources {
		n += len(s.claims)
	}
	return n
}
