package sasl

// Credentials from a salted password, as Kafka's AlterUserScramCredentials
// delivers them (the client salts and hashes; the broker derives StoredKey
// and ServerKey and keeps only those), and the store's full listing, which
// the node needs to lay one store over another.

import (
	"errors"
	"fmt"
	"sort"
)

// MaxIteration is Kafka's maximum iteration count for both SCRAM
// mechanisms.
const MaxIteration = maxIteration

// CredentialFromSalted makes mechanism's credential from the salted
// password (Hi(password, salt, iterations), RFC 5802) and the salt and
// iteration count it was made with.
func CredentialFromSalted(mechanism string, salt, salted []byte, iterations int) (ScramCredential, error) {
	h := scramHash(mechanism)
	if h == nil {
		return ScramCredential{}, fmt.Errorf("mechanism %q is not SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	if iterations < MinIteration || iterations > maxIteration {
		return ScramCredential{}, fmt.Errorf("%d iterations, want %d..%d", iterations, MinIteration, maxIteration)
	}
	if len(salt) == 0 || len(salted) == 0 {
		return ScramCredential{}, errors.New("empty salt or salted password")
	}
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	sum := h()
	sum.Write(clientKey)
	return ScramCredential{Mechanism: mechanism, Iterations: iterations, Salt: append([]byte(nil), salt...),
		StoredKey: sum.Sum(nil), ServerKey: hmacOf(h, salted, []byte("Server Key"))}, nil
}

// All lists every credential in the store, by user then mechanism.
func (s *Store) All() []UserCredential {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []UserCredential
	for user, creds := range s.users {
		for _, c := range creds {
			out = append(out, UserCredential{User: user, ScramCredential: c})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].Mechanism < out[j].Mechanism
	})
	return out
}
