package membership

import "errors"

// ErrBrokerAlive was returned by Decommission for a broker gossip saw
// alive, before decommission drained brokers (roster_drain.go); kept for
// callers that still test for it.
var ErrBrokerAlive = errors.New("broker is alive")

// Roster returns the broker ids placement hashes over (decommissioned ones
// excluded), ascending.
func (a *Agent) Roster() []int32 { return a.roster.IDs() }

// RosterEntries returns the roster with tombstones, for display.
func (a *Agent) RosterEntries() []RosterEntry { return a.roster.Entries() }

// RosterDigest is this node's roster fingerprint ("rv" tag).
func (a *Agent) RosterDigest() string { return a.roster.Digest() }
