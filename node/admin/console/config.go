package console

import "time"

// Config is what a node's console keeps and how it reaches its peers.
type Config struct {
	// Source is where the samples come from: the node's partitions and
	// groups.
	Source Source
	// Peers reaches the other live brokers' consoles for the cluster-wide
	// state; nil shows this node's own only.
	Peers Peers
	// NodeID is this node's broker id, as the merged state names leaders
	// and coordinators.
	NodeID int32
	// Interval is how often the sampler takes a point.
	Interval time.Duration
	// Keep is how many points each series holds (Keep × Interval is the
	// span of the charts).
	Keep int
	// MaxSeries bounds how many series (partitions plus group partitions)
	// the history holds; those beyond it are not sampled, so memory stays
	// under MaxSeries × Keep points whatever the cluster's size.
	MaxSeries int
	// MaxGroups bounds how many groups the sampler describes a second
	// (Source.Groups); the views say how many more there are.
	MaxGroups int
	// IdleStop stops the sampler, and drops its points, once nobody has
	// read the history for this long.
	IdleStop time.Duration
	// PeerTimeout bounds one peer's answer to the cluster-wide state.
	PeerTimeout time.Duration
	// Events is how many membership events the timeline keeps.
	Events int
	// Closing stops the sampler when the node shuts down.
	Closing <-chan struct{}
}

// DefaultConfig is a point a second for five minutes, at most 4096 series
// (about 4096 × 300 × 64 bytes = 75 MiB at the very worst, a few hundred
// KiB for a usual node) and 500 groups, stopped after two idle minutes,
// and the last 256 membership events.
func DefaultConfig() Config {
	return Config{
		Interval:    time.Second,
		Keep:        300,
		MaxSeries:   4096,
		MaxGroups:   500,
		IdleStop:    2 * time.Minute,
		PeerTimeout: 2 * time.Second,
		Events:      256,
	}
}
