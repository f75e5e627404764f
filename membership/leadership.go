package membership

import "fmt"

// SetLeadershipTag publishes value as this node's "lv" tag, which tells
// peers that the partitions it leads changed (node/leadership pulls them).
// Serf spreads the update by gossip; callers coalesce changes, as each
// call is one gossip broadcast.
func (a *Agent) SetLeadershipTag(value string) error {
	if len(value) > maxLeadershipTagBytes {
		return fmt.Errorf("leadership tag %q over %d bytes", value, maxLeadershipTagBytes)
	}
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	if a.isShutdown() {
		return nil
	}
	if a.serf.LocalMember().Tags[TagLeadership] == value {
		return nil
	}
	a.setTagLocked(TagLeadership, value)
	return nil
}
