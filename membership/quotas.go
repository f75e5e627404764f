package membership

// The agent's client quota operations. Saving, spreading and repairing
// are every catalog set's (entry_kind.go).

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// eventQuota carries one QuotaEntry, JSON: about 150 bytes for usual
// names; one near the name bound is left to anti-entropy.
const eventQuota = "spool-quota"

// maxQuotaEvents is how many events one quota change sends at most.
const maxQuotaEvents = 64

func newQuotasKind() *entryKind[quotaKey, QuotaEntry] {
	return &entryKind[quotaKey, QuotaEntry]{what: "client quota", event: eventQuota,
		merge: (*Catalog).MergeQuotas,
		fields: func(e QuotaEntry) logrus.Fields {
			return logrus.Fields{"entity": e.Entity.String(), "key": e.Key, "value": e.Value, "deleted": e.Deleted, "origin": e.Origin}
		}}
}

// QuotaChange sets an entity's key to Value, or removes it (Remove).
type QuotaChange struct {
	Entity QuotaEntity
	Key    string
	Value  float64
	Remove bool
}

// AlterQuotas makes changes cluster-wide, all saved at once or none.
// Removing a key that is not set does nothing. The error wraps
// ErrInvalidQuota, ErrTooManyQuotas (this node's view), ErrMixedVersions
// (a live node would not keep quotas) or ErrNotDurable.
func (a *Agent) AlterQuotas(changes []QuotaChange) error {
	for _, c := range changes {
		if err := c.Entity.Validate(); err != nil {
			return err
		}
		if !c.Remove {
			if err := ValidateQuota(c.Entity, c.Key, c.Value); err != nil {
				return err
			}
		}
	}
	if err := a.RequireFeature(FeatureQuotas); err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	// A key changed twice in one call takes the last change.
	last := map[quotaKey]int{}
	for i, c := range changes {
		last[quotaKey{c.Entity, c.Key}] = i
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	entries := make([]QuotaEntry, 0, len(changes))
	added := 0
	for i, c := range changes {
		if last[quotaKey{c.Entity, c.Key}] != i {
			continue
		}
		cur, ok := a.catalog.quota(c.Entity, c.Key)
		live := ok && !cur.Deleted
		if c.Remove {
			if !live {
				continue
			}
		} else {
			if live && cur.Value == c.Value {
				continue
			}
			if !live {
				added++
			}
		}
		e := QuotaEntry{Entity: c.Entity, Key: c.Key, Value: c.Value, Deleted: c.Remove, Lamport: a.catalog.tick(), Origin: a.cfg.BrokerID}
		if c.Remove {
			e.Value = 0
		}
		entries = append(entries, e)
	}
	if added > 0 && a.catalog.liveQuotas()+added > MaxQuotas {
		return fmt.Errorf("add %d client quotas: %w", added, ErrTooManyQuotas)
	}
	if err := mergeEntries(a, a.quotas, entries, "local"); err != nil {
		return fmt.Errorf("alter client quotas: %w", err)
	}
	for i, e := range entries {
		if i == maxQuotaEvents {
			a.log.WithField("quotas", len(entries)-i).Info("client quota changes beyond the event budget spread by anti-entropy")
			break
		}
		broadcastEntry(a, a.quotas, e)
	}
	return nil
}

// Quotas returns the live quota entries, in entry order (by entity, then
// key).
func (a *Agent) Quotas() []QuotaEntry {
	all := a.catalog.Quotas()
	out := all[:0]
	for _, e := range all {
		if !e.Deleted {
			out = append(out, e)
		}
	}
	return out
}

// QuotasGeneration changes whenever the quotas this agent holds do; one
// atomic load, so an enforcer may ask it on every request.
func (a *Agent) QuotasGeneration() uint64 { return a.quotas.gen.Load() }
