package membership

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Features: what a node's version can do that the previous version could
// not, advertised in the "feat" tag (comma-separated) so that a change the
// previous version would misread is refused while such a node is alive
// (a rolling upgrade). A node whose tags lack "feat" is of the previous
// version and has none of them:
//
//   - drain: reads the roster's version-2 encoding, written from the first
//     drain on (roster_drain.go); the previous version rejects it, so its
//     roster, and placement, would part from the others';
//   - settings: holds the catalog's cluster settings (rebalance.paused);
//     the previous version ignores them and goes on moving partitions;
//   - pstamp: merges a topic partition by partition (topic_merge.go);
//   - wstamp: keeps a topic's configs stamped apart (TopicEntry.Wide);
//   - serve: publishes the "sv" tag once it serves (serving.go).
//   - quotas: holds the catalog's client quotas; the previous version
//     drops them, and its digest never matches a catalog that has them.
//
// Only drain, settings and quotas gate anything yet: Decommission and
// AutoDrain need drain, pausing rebalancing needs settings, altering
// client quotas needs quotas.
const (
	TagFeatures = "feat"

	FeatureDrain     = "drain"
	FeatureSettings  = "settings"
	FeaturePStamp    = "pstamp"
	FeatureWideStamp = "wstamp"
	// FeatureLed: the node keeps the catalog's led marks (topic_led.go);
	// one of the previous version drops them.
	FeatureLed = "led"
	// FeatureServing: the node publishes the "sv" tag once it serves
	// (serving.go); one of the previous version never does.
	FeatureServing = "serve"
	// FeatureQuotas: the node keeps the catalog's client quotas (quota.go).
	FeatureQuotas = "quotas"
)

// Features are this version's features, as its nodes advertise them.
var Features = []string{FeatureDrain, FeatureSettings, FeaturePStamp, FeatureWideStamp, FeatureLed, FeatureServing, FeatureQuotas}

// ErrMixedVersions refuses a change that live nodes of an older version
// would misread; it names them.
var ErrMixedVersions = errors.New("nodes of an older version are alive")

// featuresTag is the "feat" tag's value for c; ok is false when the tag
// is left out (Config.Features empty, not nil).
func featuresTag(c *Config) (string, bool) {
	fs := c.Features
	if fs == nil {
		fs = Features
	}
	if len(fs) == 0 {
		return "", false
	}
	return strings.Join(fs, ","), true
}

// parseFeatures reads the "feat" tag; nil when there is none (an older
// node).
func parseFeatures(tags map[string]string) []string {
	raw, ok := tags[TagFeatures]
	if !ok || raw == "" {
		return nil
	}
	return strings.Split(raw, ",")
}

// Has tells whether the member advertises feature f.
func (m Member) Has(f string) bool { return slices.Contains(m.Features, f) }

// RequireFeature fails, wrapping ErrMixedVersions and naming them, when a
// live member does not advertise f. Failed and left members do not hold a
// change back: one that comes back of an older version finds the change
// made, as it would after any upgrade's rollback.
func (a *Agent) RequireFeature(f string) error {
	var old []string
	for _, m := range a.Members() {
		if m.Status == StatusAlive && !m.Has(f) {
			old = append(old, fmt.Sprintf("broker %d (%s)", m.BrokerID, m.Name))
		}
	}
	if len(old) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s lack %q; upgrade them (or stop them) first", ErrMixedVersions, strings.Join(old, ", "), f)
}
