package node

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/wire"
)

// SaslHandshake: v1
//
// Behavior:
// * Answers with the mechanisms enabled (SASLConfig.Mechanisms) and starts
//   an authentication with the one asked for; the SaslAuthenticate
//   requests that follow carry its messages (node/access/gate.go).
// * An unknown or disabled mechanism gets UNSUPPORTED_SASL_MECHANISM, a
//   handshake on a listener that is not SASL_* or while an authentication
//   is under way gets ILLEGAL_SASL_STATE; either closes the connection
//   after the answer, as Kafka does.
// * After authentication, a new handshake starts a re-authentication
//   (KIP-368), which must use the same mechanism.
//
// Version notes:
// * v0: the tokens of the authentication follow in bare size-prefixed
//   frames rather than SaslAuthenticate requests (wire.StartRawSASL;
//   handled by handleRawSASLToken below). A failure closes the connection
//   without an answer, as Kafka does, and there is no re-authentication:
//   with a session lifetime the connection is closed once it has passed.
//   sarama uses v0 unless Net.SASL.Version is SASLHandshakeV1.
// * v1: SaslAuthenticate carries the tokens.

func (n *Node) handleSaslHandshake(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), n.cfg.SASL.Mechanisms...)
	cs := access.ConnOf(ctx)
	if !cs.OnSASLListener() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	if !n.cfg.SASL.Offers(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return wire.ThenClose(resp)
	}
	if err := cs.SASL.Handshake(req.Mechanism, n.access.SASLStore()); err != nil {
		n.log.WithError(err).WithField("mechanism", req.Mechanism).Debug("SASL handshake refused")
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	if req.Version == 0 {
		return wire.StartRawSASL(resp)
	}
	return resp
}

// handleRawSASLToken answers one token of an authentication a SaslHandshake
// v0 started: the server's token, the last one ending the raw mode; a
// failure closes the connection.
func (n *Node) handleRawSASLToken(ctx context.Context, req *wire.Request) wire.Response {
	cs := access.ConnOf(ctx)
	if !cs.OnSASLListener() {
		return wire.CloseConnection
	}
	reply, done, err := cs.SASL.Step(req.RawSASL, n.cfg.SASL.SessionLifetime, time.Now())
	if err != nil {
		n.access.SASLFailed()
		n.log.WithError(err).WithFields(logrus.Fields{"listener": cs.ListenerName(), "mechanism": cs.SASL.Mechanism(),
			"remote": addrString(req), "handshake": 0}).Info("SASL authentication failed")
		return wire.CloseConnection
	}
	if done {
		n.access.SASLAuthenticated()
	}
	return wire.RawSASLToken(reply, done)
}
