package node

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

// SaslAuthenticate: v0-2
//
// Behavior:
// * Carries one message of the authentication the SaslHandshake before it
//   started (PLAIN: one; SCRAM: two) and answers with the server's.
// * A failed authentication (wrong password, unknown user: the same to the
//   client) gets SASL_AUTHENTICATION_FAILED with Kafka's message, then the
//   connection is closed. Without a handshake before it: ILLEGAL_SASL_STATE,
//   then closed.
// * The answer completing an authentication carries the session lifetime
//   (v1+, SASLConfig.SessionLifetime; 0 when sessions do not end).
//
// Version notes:
// * v1: SessionLifetimeMillis (KIP-368)
// * v2: flexible versions

func (n *Node) handleSaslAuthenticate(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	cs := access.ConnOf(ctx)
	if !cs.OnSASLListener() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	lifetime := n.cfg.SASL.SessionLifetime
	reply, done, err := cs.SASL.Step(req.SASLAuthBytes, lifetime, time.Now())
	if err == sasl.ErrOutOfOrder {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	if err != nil {
		n.access.SASLFailed()
		mechanism := cs.SASL.Mechanism()
		n.log.WithError(err).WithFields(logrus.Fields{"listener": cs.ListenerName(), "mechanism": mechanism, "remote": addrString(wreq)}).
			Info("SASL authentication failed")
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
		resp.ErrorMessage = &msg
		return wire.ThenClose(resp)
	}
	resp.SASLAuthBytes = reply
	if done {
		n.access.SASLAuthenticated()
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
		n.log.WithFields(logrus.Fields{"listener": cs.ListenerName(), "user": cs.SASL.User(), "remote": addrString(wreq)}).
			Debug("SASL authenticated")
	}
	return resp
}

func addrString(req *wire.Request) string {
	if req.RemoteAddr == nil {
		return ""
	}
	return req.RemoteAddr.String()
}
