package membership

// The agent's SCRAM user operations. Saving, spreading and repairing are
// every catalog set's (entry_kind.go).

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// eventUser carries one UserEntry, JSON. An entry is a few hundred bytes,
// well within Config.UserEventMaxBytes; one that is not is left to
// anti-entropy.
const eventUser = "spool-user"

func newUsersKind() *entryKind[userKey, UserEntry] {
	return &entryKind[userKey, UserEntry]{what: "SCRAM user", event: eventUser,
		merge: (*Catalog).MergeUsers,
		// Credentials never reach the log.
		fields: func(e UserEntry) logrus.Fields {
			return logrus.Fields{"user": e.Name, "mechanism": e.Mechanism, "deleted": e.Deleted, "origin": e.Origin}
		}}
}

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
	broadcastEntry(a, a.users, e)
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
	broadcastEntry(a, a.users, tomb)
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

func (a *Agent) mergeUsers(entries []UserEntry, source string) error {
	return mergeEntries(a, a.users, entries, source)
}
