package membership

// The agent's ACL operations. Saving, spreading and repairing are every
// catalog set's (entry_kind.go).

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// eventACL carries one ACLEntry, JSON: a couple of hundred bytes for
// usual names; a binding with names near their bounds is left to
// anti-entropy.
const eventACL = "spool-acl"

// maxACLEvents is how many events one ACL change sends at most.
const maxACLEvents = 64

func newACLsKind() *entryKind[ACLBinding, ACLEntry] {
	return &entryKind[ACLBinding, ACLEntry]{what: "ACL", event: eventACL,
		merge: (*Catalog).MergeACLs,
		fields: func(e ACLEntry) logrus.Fields {
			return logrus.Fields{"resource_type": e.ResourceType, "resource": e.ResourceName, "pattern": e.PatternType,
				"principal": e.Principal, "host": e.Host, "operation": e.Operation, "permission": e.Permission,
				"deleted": e.Deleted, "origin": e.Origin}
		}}
}

// CreateACLs adds bindings cluster-wide, all saved at once or none. A
// binding that exists already is stamped again (harmless, as Kafka
// accepts it). The error wraps ErrInvalidACL, ErrTooManyACLs (checked
// against this node's view: nodes creating at once may overshoot a little)
// or ErrNotDurable.
func (a *Agent) CreateACLs(bindings []ACLBinding) error {
	return a.changeACLs(bindings, false)
}

// DeleteACLs replaces the live bindings among bindings by tombstones;
// others are ignored. The error wraps ErrNotDurable.
func (a *Agent) DeleteACLs(bindings []ACLBinding) error {
	return a.changeACLs(bindings, true)
}

func (a *Agent) changeACLs(bindings []ACLBinding, del bool) error {
	for _, b := range bindings {
		if err := b.Validate(); err != nil {
			return err
		}
	}
	a.opMu.Lock()
	defer a.opMu.Unlock()
	if !del && len(a.ACLs())+len(bindings) > MaxACLs {
		return fmt.Errorf("create %d ACLs: %w", len(bindings), ErrTooManyACLs)
	}
	entries := make([]ACLEntry, 0, len(bindings))
	for _, b := range bindings {
		if del {
			if cur, ok := a.catalog.acl(b); !ok || cur.Deleted {
				continue
			}
		}
		entries = append(entries, ACLEntry{ACLBinding: b, Deleted: del, Lamport: a.catalog.tick(), Origin: a.cfg.BrokerID})
	}
	if err := mergeEntries(a, a.acls, entries, "local"); err != nil {
		return fmt.Errorf("change ACLs: %w", err)
	}
	// One event per binding; a bulk change beyond maxACLEvents is left to
	// anti-entropy rather than flooding Serf's event queue.
	for i, e := range entries {
		if i == maxACLEvents {
			a.log.WithField("acls", len(entries)-i).Info("ACL changes beyond the event budget spread by anti-entropy")
			break
		}
		broadcastEntry(a, a.acls, e)
	}
	return nil
}

// ACLs returns the live bindings, in binding order.
func (a *Agent) ACLs() []ACLBinding {
	all := a.catalog.ACLs()
	out := make([]ACLBinding, 0, len(all))
	for _, e := range all {
		if !e.Deleted {
			out = append(out, e.ACLBinding)
		}
	}
	return out
}

// ACLsGeneration changes whenever the ACLs this agent holds do; it is one
// atomic load, so an authorizer may ask it on every request.
func (a *Agent) ACLsGeneration() uint64 { return a.acls.gen.Load() }
