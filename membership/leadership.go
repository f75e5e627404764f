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
	a.mu.Lock()
	a.leadershipTag = value
	a.mu.Unlock()
	a.publishTags()
	return nil
}
