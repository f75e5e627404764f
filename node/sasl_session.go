package node

// A connection's SASL session on a SASL listener, and the gate in front of
// every other request: before authentication only ApiVersions (which wire
// answers), SaslHandshake and SaslAuthenticate pass; anything else gets
// Kafka's ILLEGAL_SASL_STATE where its response has a top-level error code,
// and the connection is closed either way, so no data ever reaches an
// unauthenticated client. Once the session's lifetime (KIP-368) has passed,
// the next request other than re-authentication closes the connection, as
// Kafka does; re-authenticating (SaslHandshake + SaslAuthenticate on the
// same connection, same mechanism and user) starts a new lifetime.

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

type saslSession struct {
	mu sync.Mutex
	// exchange is the authentication under way, between a SaslHandshake
	// and the SaslAuthenticate that completes it.
	exchange  sasl.Exchange
	mechanism string
	// user is the authenticated user; empty before the first
	// authentication.
	user    string
	expires time.Time // zero: never
}

var (
	errSASLOutOfOrder      = errors.New("SaslAuthenticate without a SaslHandshake before it")
	errSASLHandshakeAgain  = errors.New("SaslHandshake while an authentication is under way")
	errSASLOtherMechanism  = errors.New("re-authentication must use the mechanism of the first authentication")
	errSASLChangePrincipal = errors.New("re-authentication must be as the same user")
)

// handshake starts an authentication with mechanism.
func (s *saslSession) handshake(mechanism string, store *sasl.Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exchange != nil {
		return errSASLHandshakeAgain
	}
	if s.user != "" && mechanism != s.mechanism {
		return errSASLOtherMechanism
	}
	ex, err := sasl.NewExchange(mechanism, store)
	if err != nil {
		return err
	}
	s.exchange, s.mechanism = ex, mechanism
	return nil
}

// step feeds the client's message to the authentication under way. When
// it completes, the session is authenticated for lifetime (0: for ever).
func (s *saslSession) step(msg []byte, lifetime time.Duration, now time.Time) (reply []byte, done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exchange == nil {
		return nil, false, errSASLOutOfOrder
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
		return nil, false, errSASLChangePrincipal
	}
	s.user = user
	s.expires = time.Time{}
	if lifetime > 0 {
		s.expires = now.Add(lifetime)
	}
	return reply, true, nil
}

// sessionState is where a connection stands for requests other than SASL's.
type sessionState int

const (
	sessionUnauthenticated sessionState = iota
	sessionAuthenticated
	sessionExpired
)

func (s *saslSession) state(now time.Time) sessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.user == "":
		return sessionUnauthenticated
	case !s.expires.IsZero() && !now.Before(s.expires):
		return sessionExpired
	}
	return sessionAuthenticated
}

// authenticatedUser is the session's user; empty before authentication.
func (s *saslSession) authenticatedUser() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// maxUnauthenticatedRequestBytes bounds each request of a client that has
// not authenticated yet (Kafka's sasl.server.max.receive.size): the SASL
// requests it may send are small, and nobody unknown should make the node
// read and hold up to MaxRequestBytes.
const maxUnauthenticatedRequestBytes = 512 << 10

// unauthenticatedRequestLimit is SASL listeners' wire.ListenerOptions.RequestLimit.
func unauthenticatedRequestLimit(ctx context.Context) int32 {
	if cs := connStateOf(ctx); cs != nil && cs.sasl.authenticatedUser() == "" {
		return maxUnauthenticatedRequestBytes
	}
	return 0
}

// isSASLRequest reports the APIs a SASL listener serves before
// authentication (besides ApiVersions, which wire answers).
func isSASLRequest(key int16) bool {
	return key == int16(kmsg.SASLHandshake) || key == int16(kmsg.SASLAuthenticate) || key == wire.APIKeyRawSASL
}

// saslGate answers a request that may not pass on this connection; ok is
// true when it may.
func (n *Node) saslGate(cs *connState, req *wire.Request) (wire.Response, bool) {
	if cs == nil || cs.listener == nil || !cs.listener.Protocol.SASL() || isSASLRequest(req.APIKey) {
		return nil, true
	}
	switch cs.sasl.state(time.Now()) {
	case sessionAuthenticated:
		return nil, true
	case sessionExpired:
		n.log.WithField("user", cs.sasl.authenticatedUser()).WithField("api_key", req.APIKey).
			Debug("closing a Kafka connection whose SASL session expired")
		return wire.CloseConnection, false
	}
	n.log.WithField("api_key", req.APIKey).WithField("listener", cs.listener.Name).
		Debug("closing a Kafka connection that sent a request before authenticating")
	if resp := errorResponse(req.Body, kerr.IllegalSaslState.Code); resp != nil {
		return wire.ThenClose(resp), false
	}
	return wire.CloseConnection, false
}

// errorResponse is req's empty response carrying code in its top-level
// ErrorCode, or nil when that response has none at the request's version
// (Produce, Fetch, Metadata before v13, ...): those get the connection
// closed without an answer, so that no client reads an empty answer as
// "nothing there".
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	v := reflect.ValueOf(resp).Elem()
	f := v.FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil
	}
	without := resp.AppendTo(nil)
	f.SetInt(int64(code))
	if bytes.Equal(without, resp.AppendTo(nil)) {
		return nil // the version does not carry the field
	}
	return resp
}

// currentMechanism is the mechanism of the last handshake.
func (s *saslSession) currentMechanism() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mechanism
}
