package membership

import (
	"errors"
	"fmt"
)

// ErrBrokerAlive is returned by Decommission for a broker gossip sees alive.
var ErrBrokerAlive = errors.New("broker is alive")

// Roster returns the broker ids placement hashes over (decommissioned ones
// excluded), ascending.
func (a *Agent) Roster() []int32 { return a.roster.IDs() }

// RosterEntries returns the roster with tombstones, for display.
func (a *Agent) RosterEntries() []RosterEntry { return a.roster.Entries() }

// RosterDigest is this node's roster fingerprint ("rv" tag).
func (a *Agent) RosterDigest() string { return a.roster.Digest() }

// Decommission removes broker id from the roster, once the roster file says so, an operator action for a
// broker that is gone for good. It refuses a broker that gossip sees alive
// (stop it first), since a live broker would be re-added at once. The
// tombstone spreads like any roster change: the "rv" tag changes, peers pull
// this roster and merge, and the tombstone (same generation, decommissioned)
// outranks their "alive" entry. Existing replica lists are not changed.
func (a *Agent) Decommission(id int32) error {
	if a.IsAlive(id) {
		return fmt.Errorf("decommission broker %d: %w; stop it first", id, ErrBrokerAlive)
	}
	cur, ok := a.roster.entry(id)
	if !ok {
		return fmt.Errorf("decommission broker %d: %w", id, ErrUnknownBroker)
	}
	if cur.Decommissioned {
		return nil
	}
	cur.Decommissioned = true
	if err := a.persistRoster(cur); err != nil {
		return fmt.Errorf("decommission broker %d: %w", id, err)
	}
	a.log.WithField("decommissioned", id).Warn("broker decommissioned from the roster")
	return nil
}
