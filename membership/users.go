package membership

// The agent's SCRAM user operations: a local upsert or delete is stamped
// with a new Lamport tick, saved with the catalog (a change that cannot be
// saved is not made), then broadcast in a Serf user event; peers merge it
// and save it the same way, and anti-entropy (sync.go) repairs a lost
// event, since users ride in the catalog's digest and snapshot.

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"
)

// eventUser carries one UserEntry, JSON. An entry is a few hundred bytes,
// well within Config.UserEventMaxBytes; one that is not is left to
// anti-entropy.
const eventUser = "spool-user"

// UserCredential is what an upsert gives: the credential of one SCRAM
// mechanism, derived by the caller from the salted password.
type UserCredential struct {
	Mechanism  string
	Iterations int
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
}

// UpsertUser sets name's credential for cred.Mechanism cluster-wide and
// returns the entry. The error wraps ErrInvalidUser for a bad name,
// mechanism, iteration count or key, and ErrNotDurable when the catalog
// could not be saved (then nothing changed).
func (a *Agent) UpsertUser(name string, cred UserCredential) (UserEntry, error) {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	e := UserEntry{Name: name, Mechanism: cred.Mechanism, Iterations: cred.Iterations,
		Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Origin: a.cfg.BrokerID}
	if err := e.validate(); err != nil {
		return UserEntry{}, err
	}
	e.Lamport = a.catalog.tick()
	if err := a.mergeUsers([]UserEntry{e}, "local"); err != nil {
		return UserEntry{}, fmt.Errorf("upsert user %s: %w", name, err)
	}
	a.broadcastUser(e)
	return e.clone(), nil
}

// DeleteUser replaces name's live credential for mechanism by a
// tombstone. The error wraps ErrUnknownUser when there is none, and
// ErrNotDurable when the tombstone could not be saved.
func (a *Agent) DeleteUser(name, mechanism string) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	cur, ok := a.catalog.user(name, mechanism)
	if !ok || cur.Deleted {
		return fmt.Errorf("delete user %s %s: %w", name, mechanism, ErrUnknownUser)
	}
	tomb := UserEntry{Name: name, Mechanism: mechanism, Deleted: true, Lamport: a.catalog.tick(), Origin: a.cfg.BrokerID}
	if err := a.mergeUsers([]UserEntry{tomb}, "local"); err != nil {
		return fmt.Errorf("delete user %s %s: %w", name, mechanism, err)
	}
	a.broadcastUser(tomb)
	return nil
}

// Users returns the live user entries, by name then mechanism.
func (a *Agent) Users() []UserEntry {
	all := a.catalog.Users()
	out := all[:0]
	for _, e := range all {
		if !e.Deleted {
			out = append(out, e)
		}
	}
	return out
}

// UsersGeneration changes whenever the catalog's users do; a node derives
// its SASL store from Users again when it moves.
func (a *Agent) UsersGeneration() uint64 { return a.catalog.UsersGeneration() }

func (a *Agent) broadcastUser(e UserEntry) {
	log := a.log.WithFields(logrus.Fields{"user": e.Name, "mechanism": e.Mechanism, "lamport": e.Lamport})
	payload, err := json.Marshal(e)
	if err != nil || len(eventUser)+len(payload) > a.cfg.UserEventMaxBytes {
		log.Warn("user entry too big for a user event; anti-entropy will spread it")
		return
	}
	if err := a.serf.UserEvent(eventUser, payload, false); err != nil {
		log.WithError(err).Warn("broadcast user; anti-entropy will spread it")
	}
}

// handleUserEntryEvent merges a user entry a peer broadcast.
func (a *Agent) handleUserEntryEvent(payload []byte) {
	var e UserEntry
	if err := json.Unmarshal(payload, &e); err != nil {
		a.log.WithError(err).Warn("undecodable user event; anti-entropy will repair")
		return
	}
	_ = a.mergeUsers([]UserEntry{e}, "event") // logged; retried
}

// mergeUsers is mergeCatalog for user entries: the change is made on a
// copy of the catalog and saved first, and only then taken, so a failed
// save leaves the catalog as it was and returns an error wrapping
// ErrNotDurable; peers' entries are kept and merged again every
// anti-entropy round. Credentials never reach the log.
func (a *Agent) mergeUsers(entries []UserEntry, source string) error {
	if len(entries) == 0 {
		return nil
	}
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	next := a.catalog.clone()
	changed, err := next.MergeUsers(entries)
	if err != nil {
		a.log.WithError(err).WithField("source", source).Warn("ignored invalid user entries")
	}
	if len(changed) == 0 {
		return nil
	}
	if err := saveCatalog(a.catalogPath, next); err != nil {
		a.log.WithError(err).WithField("source", source).Error("persist catalog failed; the user change is not applied")
		metrics.IncrCounter([]string{"spool", "membership", "catalog", "persist_failures"}, 1)
		if source != "local" {
			a.keepUsersForRetry(entries)
		}
		return fmt.Errorf("user change: %w: %w", ErrNotDurable, err)
	}
	a.catalog.adopt(next)
	for _, e := range changed {
		a.log.WithFields(logrus.Fields{"user": e.Name, "mechanism": e.Mechanism, "deleted": e.Deleted,
			"lamport": e.Lamport, "origin": e.Origin, "source": source}).Info("SCRAM user changed")
	}
	return nil
}

// keepUsersForRetry remembers peers' user entries whose save failed, the
// newest per key. Called with persistMu held.
func (a *Agent) keepUsersForRetry(entries []UserEntry) {
	if a.usersRetry == nil {
		a.usersRetry = make(map[userKey]UserEntry)
	}
	for _, e := range entries {
		if e.validate() != nil {
			continue
		}
		if cur, ok := a.usersRetry[e.key()]; !ok || e.newerThan(cur) {
			a.usersRetry[e.key()] = e.clone()
		}
	}
}

// retryUsers merges again the user entries whose save failed.
func (a *Agent) retryUsers() {
	a.persistMu.Lock()
	pending := make([]UserEntry, 0, len(a.usersRetry))
	for _, e := range a.usersRetry {
		pending = append(pending, e)
	}
	a.usersRetry = nil
	a.persistMu.Unlock()
	if err := a.mergeUsers(pending, "retry"); err == nil && len(pending) > 0 {
		a.log.WithField("entries", len(pending)).Info("user change saved on retry")
	}
}
