package wire

// Raw SASL tokens, for clients that authenticate with SaslHandshake v0
// (sarama's default, clients older than Kafka 1.0): after the v0 handshake
// the client sends each SASL token in a bare size-prefixed frame, with no
// Kafka request header, and reads the server's token back the same way,
// until the authentication is complete; then Kafka requests follow. The
// Handler switches a connection into this mode by answering the handshake
// with StartRawSASL, receives each token as a Request whose APIKey is
// APIKeyRawSASL, and answers it with RawSASLToken, done on the last one.
//
// The mode is set before the response that announces it is written and
// cleared before the last token is, and a client sends nothing between a
// request and its answer during authentication, so the reader always knows
// how to read the frame that arrives next.

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxRawSASLToken bounds a raw token as Kafka's sasl.server.max.receive.size
// does: what an unauthenticated client may make the server hold.
const maxRawSASLToken = 512 << 10

// APIKeyRawSASL is the APIKey of a Request carrying a raw SASL token in
// RawSASL (no Kafka API has a negative key).
const APIKeyRawSASL int16 = -1

type startRawSASL struct{ resp kmsg.Response }

// StartRawSASL answers a SaslHandshake v0 with resp and reads the frames
// that follow as raw SASL tokens.
func StartRawSASL(resp kmsg.Response) Response { return startRawSASL{resp} }

type rawSASLToken struct {
	token []byte
	done  bool
}

// RawSASLToken answers a raw SASL token with the server's; done ends the
// raw mode: the frames after it are Kafka requests again.
func RawSASLToken(token []byte, done bool) Response { return rawSASLToken{token, done} }

// rawSASLRequest is the inbound of a frame read in raw mode.
func rawSASLRequest(frame []byte, remote net.Addr) inbound {
	return inbound{
		size: int32(len(frame)),
		req:  &Request{APIKey: APIKeyRawSASL, CorrelationID: -1, RawSASL: frame, RemoteAddr: remote},
	}
}

// appendRawSASLToken frames a token: its size, then its bytes.
func appendRawSASLToken(dst, token []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(token)))
	return append(dst, token...)
}
