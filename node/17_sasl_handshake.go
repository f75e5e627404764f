package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// SaslHandshake: v1
//
// Behavior:
// * Answers with the mechanisms enabled (SASLConfig.Mechanisms) and starts
//   an authentication with the one asked for; the SaslAuthenticate
//   requests that follow carry its messages (sasl_session.go).
// * An unknown or disabled mechanism gets UNSUPPORTED_SASL_MECHANISM, a
//   handshake on a listener that is not SASL_* or while an authentication
//   is under way gets ILLEGAL_SASL_STATE; either closes the connection
//   after the answer, as Kafka does.
// * After authentication, a new handshake starts a re-authentication
//   (KIP-368), which must use the same mechanism.
//
// Version notes:
// * v0 is advertised, because librdkafka takes a broker without it for one
//   that has no SASL at all, but refused with ILLEGAL_SASL_STATE (then the
//   connection closes): after a v0 handshake a client sends raw SASL tokens
//   outside Kafka framing, which Spool does not read. Clients that know v1
//   (librdkafka, franz-go, kafkajs, kafka-go, and sarama with
//   Net.SASL.Version = SASLHandshakeV1) send it to a broker that offers it.

func (n *Node) handleSaslHandshake(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), n.cfg.SASL.Mechanisms...)
	cs := connStateOf(ctx)
	if req.Version < 1 || cs == nil || cs.listener == nil || !cs.listener.Protocol.SASL() {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	if !n.cfg.SASL.offers(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return wire.ThenClose(resp)
	}
	if err := cs.sasl.handshake(req.Mechanism, n.saslStore.Load()); err != nil {
		n.log.WithError(err).WithField("mechanism", req.Mechanism).Debug("SASL handshake refused")
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return wire.ThenClose(resp)
	}
	return resp
}
