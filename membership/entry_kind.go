package membership

// How the agent changes, saves, spreads and repairs a keyed entry set of
// the catalog (catalog_set.go), the same for every kind (SCRAM users,
// ACLs): a local change is stamped with a new Lamport tick, saved with the
// catalog before memory takes it (a change that cannot be saved is not
// made), then broadcast in a Serf user event; peers merge and save it the
// same way, and anti-entropy (sync.go) repairs a lost event, since every
// set rides in the catalog's digest and snapshot.

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"
)

// entryKind is one kind of set, as the agent handles it.
type entryKind[K comparable, E versioned[K, E]] struct {
	what  string // in logs and errors: "user", "ACL"
	event string // the Serf user event that carries one entry, JSON
	merge func(*Catalog, []E) ([]E, error)
	// fields describes an entry in logs; never a secret.
	fields func(E) logrus.Fields
	// gen is bumped after every change memory takes, for readers that
	// must tell cheaply whether anything changed (an authorizer on every
	// produce).
	gen atomic.Uint64
	// retry holds peers' entries whose save failed, the newest per key,
	// merged again each anti-entropy round (under persistMu).
	retry map[K]E
}

// mergeEntries is mergeCatalog for a set: the change is made on a copy
// of the catalog and saved first, and only then taken, so a failed save
// leaves the catalog as it was and returns an error wrapping
// ErrNotDurable; peers' entries are kept and merged again every
// anti-entropy round.
func mergeEntries[K comparable, E versioned[K, E]](a *Agent, k *entryKind[K, E], entries []E, source string) error {
	if len(entries) == 0 {
		return nil
	}
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	next := a.catalog.clone()
	changed, err := k.merge(next, entries)
	if err != nil {
		a.log.WithError(err).WithField("source", source).Warnf("ignored invalid %s entries", k.what)
	}
	if len(changed) == 0 {
		return nil
	}
	if err := saveCatalog(a.catalogPath, next); err != nil {
		a.log.WithError(err).WithField("source", source).Errorf("persist catalog failed; the %s change is not applied", k.what)
		metrics.IncrCounter([]string{"spool", "membership", "catalog", "persist_failures"}, 1)
		if source != "local" {
			keepForRetry(k, entries)
		}
		return fmt.Errorf("%s change: %w: %w", k.what, ErrNotDurable, err)
	}
	a.catalog.adopt(next)
	k.gen.Add(1)
	for _, e := range changed {
		a.log.WithFields(k.fields(e)).WithFields(logrus.Fields{"lamport": e.lamport(), "source": source}).
			Infof("%s changed", k.what)
	}
	return nil
}

// keepForRetry is called with persistMu held.
func keepForRetry[K comparable, E versioned[K, E]](k *entryKind[K, E], entries []E) {
	if k.retry == nil {
		k.retry = make(map[K]E)
	}
	for _, e := range entries {
		if e.validate() != nil {
			continue
		}
		if cur, ok := k.retry[e.key()]; !ok || e.newerThan(cur) {
			k.retry[e.key()] = e.clone()
		}
	}
}

// retryEntries merges again the entries whose save failed.
func retryEntries[K comparable, E versioned[K, E]](a *Agent, k *entryKind[K, E]) {
	a.persistMu.Lock()
	pending := make([]E, 0, len(k.retry))
	for _, e := range k.retry {
		pending = append(pending, e)
	}
	k.retry = nil
	a.persistMu.Unlock()
	if err := mergeEntries(a, k, pending, "retry"); err == nil && len(pending) > 0 {
		a.log.WithField("entries", len(pending)).Infof("%s change saved on retry", k.what)
	}
}

// broadcastEntry sends e in a user event when it fits
// Config.UserEventMaxBytes, else leaves it to anti-entropy.
func broadcastEntry[K comparable, E versioned[K, E]](a *Agent, k *entryKind[K, E], e E) {
	log := a.log.WithFields(k.fields(e)).WithField("lamport", e.lamport())
	payload, err := json.Marshal(e)
	if err != nil || len(k.event)+len(payload) > a.cfg.UserEventMaxBytes {
		log.Warnf("%s entry too big for a user event; anti-entropy will spread it", k.what)
		return
	}
	if err := a.serf.UserEvent(k.event, payload, false); err != nil {
		log.WithError(err).Warnf("broadcast %s; anti-entropy will spread it", k.what)
	}
}

// handleEntryEvent merges an entry a peer broadcast.
func handleEntryEvent[K comparable, E versioned[K, E]](a *Agent, k *entryKind[K, E], payload []byte) {
	var e E
	if err := json.Unmarshal(payload, &e); err != nil {
		a.log.WithError(err).Warnf("undecodable %s event; anti-entropy will repair", k.what)
		return
	}
	_ = mergeEntries(a, k, []E{e}, "event") // logged; retried
}
