package membership

// SCRAM users as the catalog holds them: one entry per user and SCRAM
// mechanism (salt, iterations, StoredKey, ServerKey; never a password),
// spread, merged, persisted and pulled exactly as topic entries are, so
// every node can authenticate every user wherever it was created.

import (
	"bytes"
	"errors"
	"fmt"
)

// SCRAM mechanisms a user entry may hold, and Kafka's iteration bounds.
const (
	ScramSHA256        = "SCRAM-SHA-256"
	ScramSHA512        = "SCRAM-SHA-512"
	MinScramIterations = 4096
	MaxScramIterations = 16384
	maxUserNameLen     = 256
	maxSaltLen         = 1024
)

var (
	ErrInvalidUser = errors.New("invalid SCRAM user entry")
	ErrUnknownUser = errors.New("unknown SCRAM user")
)

// UserEntry is one user's credential for one SCRAM mechanism, or its
// tombstone (Deleted, no keys). Entries are keyed by (Name, Mechanism), so
// the two mechanisms of a user are changed and deleted independently, as
// Kafka's AlterUserScramCredentials does.
//
// (Lamport, Origin) is the entry's version: the higher Lamport time wins,
// then the higher origin broker id, then a tombstone, then the higher
// StoredKey bytes (only reachable by a bug, kept so the order is total).
// Every local change is stamped with a new tick of its node's clock, which
// merging keeps above every time seen: the last writer wins.
type UserEntry struct {
	Name       string `json:"name"`
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations,omitempty"`
	Salt       []byte `json:"salt,omitempty"`
	StoredKey  []byte `json:"storedKey,omitempty"`
	ServerKey  []byte `json:"serverKey,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
	Lamport    uint64 `json:"lamport"`
	Origin     int32  `json:"origin"`
}

// userKey is what a user entry is stored under.
type userKey struct{ name, mechanism string }

func (e UserEntry) key() userKey { return userKey{e.Name, e.Mechanism} }

// newerThan reports whether e's version sorts above o's.
func (e UserEntry) newerThan(o UserEntry) bool {
	if e.Lamport != o.Lamport {
		return e.Lamport > o.Lamport
	}
	if e.Origin != o.Origin {
		return e.Origin > o.Origin
	}
	if e.Deleted != o.Deleted {
		return e.Deleted
	}
	return bytes.Compare(e.StoredKey, o.StoredKey) > 0
}

func (e UserEntry) lamport() uint64 { return e.Lamport }

// less orders user entries by name, then mechanism.
func (e UserEntry) less(o UserEntry) bool {
	if e.Name != o.Name {
		return e.Name < o.Name
	}
	return e.Mechanism < o.Mechanism
}

func (e UserEntry) clone() UserEntry {
	out := e
	out.Salt = bytes.Clone(e.Salt)
	out.StoredKey = bytes.Clone(e.StoredKey)
	out.ServerKey = bytes.Clone(e.ServerKey)
	return out
}

// scramKeySize is the size of StoredKey and ServerKey for mechanism, 0 for
// a mechanism that is not SCRAM.
func scramKeySize(mechanism string) int {
	switch mechanism {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// ValidateUserName applies the SASL store's rule: 1 to 256 bytes, no
// spaces or control characters.
func ValidateUserName(name string) error {
	if name == "" || len(name) > maxUserNameLen {
		return fmt.Errorf("%w: user name length %d not in 1..%d", ErrInvalidUser, len(name), maxUserNameLen)
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("%w: user name %.40q holds a space or control character", ErrInvalidUser, name)
		}
	}
	return nil
}

// validate checks an entry received from anywhere before it is stored.
func (e UserEntry) validate() error {
	if err := ValidateUserName(e.Name); err != nil {
		return err
	}
	size := scramKeySize(e.Mechanism)
	if size == 0 {
		return fmt.Errorf("%w: user %s: mechanism %.40q is not SCRAM-SHA-256 or SCRAM-SHA-512", ErrInvalidUser, e.Name, e.Mechanism)
	}
	if e.Deleted {
		if len(e.Salt)+len(e.StoredKey)+len(e.ServerKey) != 0 {
			return fmt.Errorf("%w: user %s: tombstone carries keys", ErrInvalidUser, e.Name)
		}
		return nil
	}
	if e.Iterations < MinScramIterations || e.Iterations > MaxScramIterations {
		return fmt.Errorf("%w: user %s: %d iterations not in %d..%d", ErrInvalidUser, e.Name, e.Iterations, MinScramIterations, MaxScramIterations)
	}
	if len(e.Salt) == 0 || len(e.Salt) > maxSaltLen {
		return fmt.Errorf("%w: user %s: salt of %d bytes not in 1..%d", ErrInvalidUser, e.Name, len(e.Salt), maxSaltLen)
	}
	if len(e.StoredKey) != size || len(e.ServerKey) != size {
		return fmt.Errorf("%w: user %s: key sizes do not fit %s", ErrInvalidUser, e.Name, e.Mechanism)
	}
	return nil
}
