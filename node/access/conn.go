package access

// Conn is what the node keeps about one Kafka connection: the listener it
// came in on and, on a SASL listener, its SASL session. wire hands each
// connection's requests to the handler one at a time, but the session is
// still guarded, since the expiry check and re-authentication may be
// asked from whichever goroutine wire is using.

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"time"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

// Conn is one Kafka connection's state.
type Conn struct {
	listener *Bound
	// tlsPeer is the verified client certificate's subject, for mTLS.
	tlsPeer string
	// SASL is the connection's SASL session, which SaslHandshake and
	// SaslAuthenticate advance.
	SASL sasl.Session

	// quotas is what the quota manager found for this connection's
	// client, and pendingRequestTime the time its last responses took to
	// encode and write, counted with its next request's (quotas.go). Only
	// the connection's requests touch them, and wire serves those one at
	// a time.
	quotas             quota.Cache
	pendingRequestTime time.Duration
}

type connKey struct{}

func newConn(l *Bound, nc net.Conn) *Conn {
	c := &Conn{listener: l}
	if tc, ok := nc.(*tls.Conn); ok {
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			c.tlsPeer = st.PeerCertificates[0].Subject.String()
		}
	}
	return c
}

func withConn(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnOf is the connection's state; nil outside a served connection.
func ConnOf(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// OnSASLListener reports whether the connection came in on a SASL
// listener (SaslHandshake and SaslAuthenticate are refused elsewhere).
func (c *Conn) OnSASLListener() bool {
	return c != nil && c.listener != nil && c.listener.Protocol.SASL()
}

// ListenerName is the name of the listener the connection came in on.
func (c *Conn) ListenerName() string { return c.listener.Name }

// principalOf is Kafka's default principal: User:<name> after SASL, the
// client certificate's distinguished name (User:CN=...) over mTLS
// without SASL, User:ANONYMOUS otherwise.
func principalOf(c *Conn) string {
	if c == nil {
		return authz.Anonymous
	}
	if u := c.SASL.User(); u != "" {
		return "User:" + u
	}
	if c.tlsPeer != "" {
		return "User:" + c.tlsPeer
	}
	return authz.Anonymous
}

// anonymousQuotaUser is the user of a client that did not authenticate.
var anonymousQuotaUser = strings.TrimPrefix(authz.Anonymous, "User:")

// quotaClientOf is who a request's quotas are looked up for: Kafka's user
// is the principal's name (ANONYMOUS when not authenticated), the client
// id as sent ("" for null). It is principalOf's name without building the
// principal's string (no allocation on the request path).
func quotaClientOf(c *Conn, wreq *wire.Request) (user, clientID string) {
	user = anonymousQuotaUser
	if c != nil {
		if u := c.SASL.User(); u != "" {
			user = u
		} else if c.tlsPeer != "" {
			user = c.tlsPeer
		}
	}
	if wreq.ClientID != nil {
		clientID = *wreq.ClientID
	}
	return user, clientID
}
