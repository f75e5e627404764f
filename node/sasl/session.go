package sasl

import (
	"errors"
	"sync"
	"time"
)

// Session is a connection's SASL session: the authentication under way
// (between a SaslHandshake and the SaslAuthenticate that completes it),
// and once one completed, the user and when the authentication expires
// (KIP-368). Re-authentication must keep the mechanism and the user. Its
// mutex guards its fields only; Step runs an exchange's step under it (no
// I/O: the credentials are in memory). The zero value is unauthenticated.
type Session struct {
	mu sync.Mutex
	// exchange is the authentication under way, between a SaslHandshake
	// and the SaslAuthenticate that completes it.
	exchange  Exchange
	mechanism string
	// user is the authenticated user; empty before the first
	// authentication.
	user    string
	expires time.Time // zero: never
}

// A session's refusals of requests out of order.
var (
	ErrOutOfOrder      = errors.New("SaslAuthenticate without a SaslHandshake before it")
	ErrHandshakeAgain  = errors.New("SaslHandshake while an authentication is under way")
	ErrOtherMechanism  = errors.New("re-authentication must use the mechanism of the first authentication")
	ErrChangePrincipal = errors.New("re-authentication must be as the same user")
)

// Handshake starts an authentication with mechanism.
func (s *Session) Handshake(mechanism string, store *Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exchange != nil {
		return ErrHandshakeAgain
	}
	if s.user != "" && mechanism != s.mechanism {
		return ErrOtherMechanism
	}
	ex, err := NewExchange(mechanism, store)
	if err != nil {
		return err
	}
	s.exchange, s.mechanism = ex, mechanism
	return nil
}

// Step feeds the client's message to the authentication under way. When
// it completes, the session is authenticated for lifetime (0: for ever).
func (s *Session) Step(msg []byte, lifetime time.Duration, now time.Time) (reply []byte, done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exchange == nil {
		return nil, false, ErrOutOfOrder
	}
	reply, done, err = s.exchange.Step(msg)
	if err != nil {
		s.exchange = nil
		return nil, false, err
	}
	if !done {
		return reply, false, nil
	}
	user := s.exchange.User()
	s.exchange = nil
	if s.user != "" && user != s.user {
		return nil, false, ErrChangePrincipal
	}
	s.user = user
	s.expires = time.Time{}
	if lifetime > 0 {
		s.expires = now.Add(lifetime)
	}
	return reply, true, nil
}

// State is where a connection stands for requests other than SASL's.
type State int

const (
	Unauthenticated State = iota
	Authenticated
	Expired
)

// State is where the session stands at now.
func (s *Session) State(now time.Time) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.user == "":
		return Unauthenticated
	case !s.expires.IsZero() && !now.Before(s.expires):
		return Expired
	}
	return Authenticated
}

// User is the session's user; empty before authentication.
func (s *Session) User() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// Mechanism is the mechanism of the last handshake.
func (s *Session) Mechanism() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mechanism
}
