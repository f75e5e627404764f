package sasl

// An exchange is one authentication attempt on one connection: the
// client's SaslAuthenticate messages go in, the server's answers come out,
// until the user is authenticated or the attempt fails.

import (
	"errors"
	"fmt"
)

// ErrAuthenticationFailed is every failure a client is told about: a
// wrong password and an unknown user look the same from outside.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid credentials")

// Exchange is one authentication attempt.
type Exchange interface {
	// Step takes the client's next message and returns the server's
	// reply; done is set once the user is authenticated. An error ends
	// the attempt: the connection should be closed after telling the
	// client.
	Step(msg []byte) (reply []byte, done bool, err error)
	// User is the authenticated user, once done.
	User() string
}

// NewExchange starts an attempt with mechanism against store.
func NewExchange(mechanism string, store *Store) (Exchange, error) {
	switch {
	case mechanism == Plain:
		return &plainExchange{store: store}, nil
	case IsScram(mechanism):
		return &scramExchange{mechanism: mechanism, store: store}, nil
	}
	return nil, fmt.Errorf("unsupported SASL mechanism %q", mechanism)
}
