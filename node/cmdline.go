package node

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/partition"
)

// What the command line needs to fill a Config, so that cmd/spool
// configures a node through this package alone.

// ParseFlushPolicy parses a flush policy's name: every-append, interval or
// os.
func ParseFlushPolicy(s string) (partition.FlushPolicy, error) {
	switch s {
	case "every-append":
		return partition.FlushEveryAppend, nil
	case "interval":
		return partition.FlushInterval, nil
	case "os":
		return partition.FlushOS, nil
	}
	return 0, fmt.Errorf("flush policy %q: want every-append, interval or os", s)
}

// GossipTimings are the gossip timing profiles Config.Gossip.Timings takes.
var GossipTimings = []string{membership.TimingsLAN, membership.TimingsLocal, membership.TimingsFast}

// CheckGossipTimings reports an unknown timing profile.
func CheckGossipTimings(s string) error {
	if slices.Contains(GossipTimings, s) {
		return nil
	}
	return fmt.Errorf("gossip timings %q: want one of %s", s, strings.Join(GossipTimings, ", "))
}

// DecodeGossipKey decodes a base64 gossip key, as given on the command
// line, and checks that it is 32 bytes (AES-256).
func DecodeGossipKey(s string) ([]byte, error) { return membership.DecodeGossipKey(s) }
