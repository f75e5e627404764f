// Package sasl authenticates Kafka clients: the server side of SASL PLAIN
// (RFC 4616) and SCRAM-SHA-256/SCRAM-SHA-512 (RFC 5802, RFC 7677), against
// SCRAM credentials that hold no password: a salt, an iteration count, and
// StoredKey and ServerKey derived from the salted password, as Kafka keeps
// them. PLAIN checks a password by deriving the same StoredKey from it.
//
// This file owns the credentials: making them from a password, the store
// the node looks users up in, and the one-line text form of a credential
// that credential files hold.
package sasl

import (
	"bufio"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain        = "PLAIN"
	ScramSHA256  = "SCRAM-SHA-256"
	ScramSHA512  = "SCRAM-SHA-512"
	MinIteration = 4096 // Kafka's minimum for both SCRAM mechanisms
	maxIteration = 16384
)

// scramHash is the hash of a SCRAM mechanism; nil for others.
func scramHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// IsScram reports whether mechanism is a SCRAM mechanism this package
// serves.
func IsScram(mechanism string) bool { return scramHash(mechanism) != nil }

// ScramCredential is what the server keeps of a SCRAM password.
type ScramCredential struct {
	Mechanism  string
	Iterations int
	Salt       []byte
	StoredKey  []byte // H(HMAC(SaltedPassword, "Client Key"))
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// NewScramCredential salts and hashes password for mechanism with a fresh
// random salt.
func NewScramCredential(mechanism, password string, iterations int) (ScramCredential, error) {
	salt := make([]byte, 32)
	if _, err := rand.Read(salt); err != nil {
		return ScramCredential{}, err
	}
	return newScramCredential(mechanism, password, salt, iterations)
}

func newScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	h := scramHash(mechanism)
	if h == nil {
		return ScramCredential{}, fmt.Errorf("mechanism %q is not SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	if iterations < MinIteration || iterations > maxIteration {
		return ScramCredential{}, fmt.Errorf("%d iterations, want %d..%d", iterations, MinIteration, maxIteration)
	}
	storedKey, serverKey, err := deriveKeys(h, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramCredential{Mechanism: mechanism, Iterations: iterations, Salt: salt, StoredKey: storedKey, ServerKey: serverKey}, nil
}

// deriveKeys computes StoredKey and ServerKey from a password (RFC 5802
// section 3).
func deriveKeys(h func() hash.Hash, password string, salt []byte, iterations int) (storedKey, serverKey []byte, err error) {
	salted, err := pbkdf2.Key(h, password, salt, iterations, h().Size())
	if err != nil {
		return nil, nil, err
	}
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	sum := h()
	sum.Write(clientKey)
	return sum.Sum(nil), hmacOf(h, salted, []byte("Server Key")), nil
}

func hmacOf(h func() hash.Hash, key, msg []byte) []byte {
	m := hmac.New(h, key)
	m.Write(msg)
	return m.Sum(nil)
}

// checkPassword reports whether password is the one c was made from.
func (c ScramCredential) checkPassword(password string) bool {
	h := scramHash(c.Mechanism)
	if h == nil {
		return false
	}
	storedKey, _, err := deriveKeys(h, password, c.Salt, c.Iterations)
	return err == nil && hmac.Equal(storedKey, c.StoredKey)
}

// Store holds every user's credentials, one per SCRAM mechanism. It is safe
// for concurrent use; Replace swaps the whole set (a reloaded file).
type Store struct {
	mu    sync.RWMutex
	users map[string]map[string]ScramCredential
}

// NewStore is an empty store.
func NewStore() *Store { return &Store{users: map[string]map[string]ScramCredential{}} }

// Set adds or replaces user's credential for its mechanism.
func (s *Store) Set(user string, c ScramCredential) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[user] == nil {
		s.users[user] = map[string]ScramCredential{}
	}
	s.users[user][c.Mechanism] = c
}

// Lookup is user's credential for a SCRAM mechanism.
func (s *Store) Lookup(user, mechanism string) (ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.users[user][mechanism]
	return c, ok
}

// credentials are all of user's credentials, for PLAIN.
func (s *Store) credentials(user string) []ScramCredential {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ScramCredential, 0, len(s.users[user]))
	for _, c := range s.users[user] {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Mechanism < out[j].Mechanism })
	return out
}

// Len is the number of users.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users)
}

// UserCredential is one line of a credentials file.
type UserCredential struct {
	User string
	ScramCredential
}

// Format is the credential's line in a credentials file:
//
//	USER MECHANISM ITERATIONS SALT STORED_KEY SERVER_KEY
//
// with the three byte strings in standard base64. It holds no password;
// still, like Kafka's, it lets whoever has it attempt an offline guess of
// the password, so the file should be readable by the node only.
func (u UserCredential) Format() string {
	b64 := base64.StdEncoding.EncodeToString
	return strings.Join([]string{u.User, u.Mechanism, strconv.Itoa(u.Iterations), b64(u.Salt), b64(u.StoredKey), b64(u.ServerKey)}, " ")
}

// ParseCredentials reads a credentials file: one Format line per
// credential; blank lines and lines starting with '#' are skipped.
func ParseCredentials(r io.Reader) ([]UserCredential, error) {
	var out []UserCredential
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 6 {
			return nil, fmt.Errorf("line %d: %d fields, want 6 (user mechanism iterations salt stored-key server-key)", line, len(f))
		}
		if !validUsername(f[0]) {
			return nil, fmt.Errorf("line %d: bad user name", line)
		}
		h := scramHash(f[1])
		if h == nil {
			return nil, fmt.Errorf("line %d: mechanism %q is not SCRAM-SHA-256 or SCRAM-SHA-512", line, f[1])
		}
		iter, err := strconv.Atoi(f[2])
		if err != nil || iter < MinIteration || iter > maxIteration {
			return nil, fmt.Errorf("line %d: iterations %q, want %d..%d", line, f[2], MinIteration, maxIteration)
		}
		var bs [3][]byte
		for i := range bs {
			if bs[i], err = base64.StdEncoding.DecodeString(f[3+i]); err != nil {
				return nil, fmt.Errorf("line %d: field %d: %w", line, 4+i, err)
			}
		}
		if size := h().Size(); len(bs[1]) != size || len(bs[2]) != size || len(bs[0]) == 0 {
			return nil, fmt.Errorf("line %d: key sizes do not fit %s", line, f[1])
		}
		out = append(out, UserCredential{User: f[0], ScramCredential: ScramCredential{
			Mechanism: f[1], Iterations: iter, Salt: bs[0], StoredKey: bs[1], ServerKey: bs[2]}})
	}
	return out, sc.Err()
}

// validUsername bounds a user name: printable, no spaces, 1-256 bytes.
func validUsername(u string) bool {
	if u == "" || len(u) > 256 {
		return false
	}
	for _, r := range u {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	return true
}
