package sasl

// PLAIN (RFC 4616): one message, "authzid NUL authcid NUL passwd", checked
// against the user's SCRAM credentials. PLAIN sends the password as is, so
// it belongs on SASL_SSL listeners only; the node does not refuse it on
// SASL_PLAINTEXT, as Kafka does not, but the README says so.

import "bytes"

// maxPlainMessage bounds a PLAIN message: two names and a password.
const maxPlainMessage = 1024

type plainExchange struct {
	store *Store
	user  string
	done  bool
}

func (p *plainExchange) Step(msg []byte) ([]byte, bool, error) {
	if p.done || len(msg) > maxPlainMessage {
		return nil, false, ErrAuthenticationFailed
	}
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, ErrAuthenticationFailed
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	// Acting for another identity is not supported.
	if (authz != "" && authz != user) || !validUsername(user) {
		return nil, false, ErrAuthenticationFailed
	}
	for _, c := range p.store.credentials(user) {
		if c.checkPassword(password) {
			p.user, p.done = user, true
			return nil, true, nil
		}
	}
	return nil, false, ErrAuthenticationFailed
}

func (p *plainExchange) User() string { return p.user }
