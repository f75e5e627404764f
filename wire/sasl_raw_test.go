package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRawSASLTokens: after a handshake answered with StartRawSASL, bare
// size-prefixed frames reach the handler as APIKeyRawSASL requests and its
// tokens go back the same way; after the last (done) token, frames are
// Kafka requests again.
func TestRawSASLTokens(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.Versions[17] = VersionRange{0, 1}
	var got [][]byte
	_, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		switch req.APIKey {
		case 17:
			return StartRawSASL(req.Body.ResponseKind())
		case APIKeyRawSASL:
			got = append(got, bytes.Clone(req.RawSASL))
			return RawSASLToken([]byte("reply-"+string(req.RawSASL)), len(got) == 2)
		}
		return req.Body.ResponseKind()
	}))
	c := dialRaw(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 0, "PLAIN"
	c.roundTrip(hs, 1)
	for _, token := range []string{"first", ""} { // a token may be empty
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
		if _, err := c.nc.Write(append(frame, token...)); err != nil {
			t.Fatal(err)
		}
		reply, err := c.readFrame()
		if err != nil {
			t.Fatalf("token %s: %v", token, err)
		}
		if string(reply) != "reply-"+token {
			t.Fatalf("token %s answered %q", token, reply)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 4
	c.roundTrip(meta, 2)
	if len(got) != 2 || string(got[0]) != "first" || len(got[1]) != 0 {
		t.Fatalf("handler got %q", got)
	}
}
