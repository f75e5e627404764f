package membership

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/atomicfile"
)

// The cluster id is one value for the whole cluster (Kafka's Metadata v2+
// ClusterID), agreed on by gossip with no coordinator:
//
//   - Each node starts from a proposal: the id it adopted before (persisted
//     in DataDir), else Config.ClusterID, else a random one, each stamped
//     with when it was first proposed (Born).
//   - Every node gossips its current id in the "cid" tag. On seeing a
//     member's tag, and on every anti-entropy round, a node adopts the id
//     that sorts lowest by (Born, ID), persists it and republishes its tag.
//     The minimum is a join-semilattice merge, so every connected node
//     settles on the same id, whatever the order of arrival.
//   - The oldest proposal wins, so a node joining an existing cluster adopts
//     the cluster's id rather than imposing its own, and a cluster's id
//     stays put as nodes come and go. Born is wall-clock time, so this
//     holds as long as a new node's clock is not behind by more than the
//     cluster's age; two clusters merged into one keep the older one's id.
type clusterID struct {
	ID   string `json:"id"`
	Born int64  `json:"born"` // Unix nanoseconds of the first proposal
}

const (
	clusterIDFile     = "cluster-id.json"
	maxClusterIDLen   = 64
	clusterIDTagSplit = "/"
)

// before reports whether c wins over o: the older proposal, then the lower id.
func (c clusterID) before(o clusterID) bool {
	if c.Born != o.Born {
		return c.Born < o.Born
	}
	return c.ID < o.ID
}

func validateClusterID(id string) error {
	if len(id) == 0 || len(id) > maxClusterIDLen {
		return fmt.Errorf("cluster id %.70q: length %d not in 1..%d", id, len(id), maxClusterIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("cluster id %q: character %q not in [a-zA-Z0-9._-]", id, c)
		}
	}
	return nil
}

// tag encodes c for the "cid" tag: "<born>/<id>".
func (c clusterID) tag() string {
	return strconv.FormatInt(c.Born, 10) + clusterIDTagSplit + c.ID
}

func parseClusterIDTag(s string) (clusterID, error) {
	born, id, ok := strings.Cut(s, clusterIDTagSplit)
	if !ok {
		return clusterID{}, fmt.Errorf("cluster id tag %.80q: no %q", s, clusterIDTagSplit)
	}
	b, err := strconv.ParseInt(born, 10, 64)
	if err != nil {
		return clusterID{}, fmt.Errorf("cluster id tag %.80q: %w", s, err)
	}
	if err := validateClusterID(id); err != nil {
		return clusterID{}, err
	}
	return clusterID{ID: id, Born: b}, nil
}

func randomClusterID() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("draw cluster id: %w", err)
	}
	return "spool-" + hex.EncodeToString(raw[:]), nil
}

// loadClusterID returns the id adopted before, or else the proposal from
// cfg, persisting it so the proposal's birth stays fixed across restarts.
func loadClusterID(path string, cfg *Config) (clusterID, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		var c clusterID
		if err := json.Unmarshal(raw, &c); err != nil {
			return clusterID{}, fmt.Errorf("parse cluster id %s: %w", path, err)
		}
		if err := validateClusterID(c.ID); err != nil {
			return clusterID{}, fmt.Errorf("%s: %w", path, err)
		}
		return c, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return clusterID{}, fmt.Errorf("read cluster id %s: %w", path, err)
	}
	c := clusterID{ID: cfg.ClusterID, Born: cfg.ClusterIDBorn.UnixNano()}
	if c.ID == "" {
		if c.ID, err = randomClusterID(); err != nil {
			return clusterID{}, err
		}
	}
	if cfg.ClusterIDBorn.IsZero() {
		c.Born = time.Now().UnixNano()
	}
	if err := saveClusterID(path, c); err != nil {
		return clusterID{}, err
	}
	return c, nil
}

func saveClusterID(path string, c clusterID) error {
	raw, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode cluster id: %w", err)
	}
	if err := atomicfile.Write(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("persist cluster id: %w", err)
	}
	return nil
}

// ClusterID is the cluster-wide id this node has settled on so far; all
// connected nodes converge on one (see clusterID).
func (a *Agent) ClusterID() string { return a.clusterID().ID }

func (a *Agent) clusterID() clusterID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cid
}

// considerClusterID notes a member's advertised cluster id ("cid" tag) if
// it wins over ours and has the sync loop adopt it (persistClusterID). Safe
// from Serf's event loop: it neither blocks nor touches the disk.
func (a *Agent) considerClusterID(member, tag string) {
	if member == a.cfg.NodeName || tag == "" {
		return
	}
	theirs, err := parseClusterIDTag(tag)
	if err != nil {
		a.log.WithError(err).WithField("member", member).Debug("ignoring a bad cluster id tag")
		return
	}
	a.mu.Lock()
	best := a.cid
	if a.cidNext != nil && a.cidNext.before(best) {
		best = *a.cidNext
	}
	adopt := theirs.before(best)
	if adopt {
		a.cidNext = &theirs
		a.cidFrom = member
	}
	a.mu.Unlock()
	if adopt {
		a.requestSync(syncRequest{kind: syncPersistClusterID})
	}
}

// persistClusterID adopts the winning cluster id seen, once it is saved
// (a failed save leaves the current id, and the next anti-entropy round
// tries again), and republishes the "cid" tag when it changed.
func (a *Agent) persistClusterID() {
	if a.adoptClusterID() {
		a.publishTags()
	}
}

// adoptClusterID saves and adopts the winning cluster id seen, if any, and
// reports whether the tags may need republishing.
func (a *Agent) adoptClusterID() bool {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	if a.isShutdown() {
		return false
	}
	a.mu.Lock()
	c, next, from := a.cid, a.cidNext, a.cidFrom
	a.mu.Unlock()
	if next != nil && next.before(c) {
		if err := saveClusterID(a.clusterIDPath, *next); err != nil {
			a.log.WithError(err).Error("persist cluster id failed; keeping the current one")
			return false
		}
		a.mu.Lock()
		a.cid = *next
		if a.cidNext == next {
			a.cidNext = nil
		}
		a.mu.Unlock()
		a.log.WithFields(logrus.Fields{"cluster_id": next.ID, "previous": c.ID, "from": from}).
			Info("adopted the cluster's id")
	}
	return true
}

// publishTags republishes this node's tags that follow its state, "rv"
// (the roster digest), "cid", "lv" (the leadership version) and "sv" (the
// alive brokers it sees, once it serves), where they differ from what it
// gossips.
// tagMu orders the updates and is held across serf.SetTags, which waits on
// the network for the broadcast (up to BroadcastTimeout); nothing else
// waits on tagMu, and no other lock is held meanwhile. The values are read
// under it, so the last update carries the newest.
func (a *Agent) publishTags() {
	a.tagMu.Lock()
	defer a.tagMu.Unlock()
	if a.isShutdown() {
		return
	}
	a.mu.Lock()
	lv := a.leadershipTag
	a.mu.Unlock()
	want := map[string]string{TagRosterDigest: a.roster.Digest(), TagClusterID: a.clusterID().tag(), TagLeadership: lv}
	if sv := a.servingTag(); sv != "" {
		want[TagServing] = sv // serving.go
	}
	tags := a.serf.LocalMember().Tags
	next := make(map[string]string, len(tags)+len(want))
	for k, v := range tags {
		next[k] = v
	}
	changed := false
	for k, v := range want {
		if tags[k] != v {
			next[k], changed = v, true
		}
	}
	if !changed {
		return
	}
	if err := a.serf.SetTags(next); err != nil {
		a.log.WithError(err).Warn("publish tags")
	}
}
