package node

// connState is what the node keeps about one Kafka connection: the
// listener it came in on and, on a SASL listener, its SASL session. wire
// hands each connection's requests to the handler one at a time, but the
// session is still guarded, since the expiry check and re-authentication
// may be asked from whichever goroutine wire is using.

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/node/sasl"
)

type connState struct {
	listener *kafkaListener
	// tlsPeer is the verified client certificate's subject, for mTLS.
	tlsPeer string
	sasl    sasl.Session

	// quotas is what the quota manager found for this connection's
	// client, and pendingRequestTime the time its last responses took to
	// encode and write, counted with its next request's
	// (quota_enforce.go). Only the connection's requests touch them, and
	// wire serves those one at a time.
	quotas             quota.Cache
	pendingRequestTime time.Duration
}

type connStateKey struct{}

func newConnState(l *kafkaListener, nc net.Conn) *connState {
	cs := &connState{listener: l}
	if tc, ok := nc.(*tls.Conn); ok {
		if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
			cs.tlsPeer = st.PeerCertificates[0].Subject.String()
		}
	}
	return cs
}

func withConnState(ctx context.Context, cs *connState) context.Context {
	return context.WithValue(ctx, connStateKey{}, cs)
}

// connStateOf is the connection's state; nil outside a served connection.
func connStateOf(ctx context.Context) *connState {
	cs, _ := ctx.Value(connStateKey{}).(*connState)
	return cs
}
