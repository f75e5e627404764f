package access

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSASLGate: before authentication, and once the session has expired,
// only SASL requests pass; the rest get Kafka's error where the response
// has a top-level error code, and the connection is closed.
func TestSASLGate(t *testing.T) {
	g := &Guard{log: logrus.New()}
	cs := &Conn{listener: &Bound{Listener: Listener{Name: "SASL", Protocol: SASLPlaintext}}}
	store := sasl.NewStore()
	cred, err := sasl.NewScramCredential(sasl.ScramSHA256, "pw", sasl.MinIteration)
	if err != nil {
		t.Fatal(err)
	}
	store.Set("alice", cred)

	metadata := &wire.Request{APIKey: int16(kmsg.Metadata), APIVersion: 13, Body: &kmsg.MetadataRequest{Version: 13}}
	produce := &wire.Request{APIKey: int16(kmsg.Produce), APIVersion: 9, Body: &kmsg.ProduceRequest{Version: 9}}
	handshake := &wire.Request{APIKey: int16(kmsg.SASLHandshake), APIVersion: 1, Body: &kmsg.SASLHandshakeRequest{Version: 1}}
	if _, ok := g.gate(cs, handshake); !ok {
		t.Fatal("SaslHandshake refused before authentication")
	}
	if resp, ok := g.gate(cs, produce); ok || resp != wire.CloseConnection {
		t.Fatalf("produce before authentication: %v %v", resp, ok)
	}
	resp, ok := g.gate(cs, metadata)
	if ok || resp == wire.CloseConnection {
		t.Fatalf("metadata before authentication: %v %v, want an error then close", resp, ok)
	}

	// Authenticate with franz-go's SCRAM client, for a lifetime.
	if err := cs.SASL.Handshake(sasl.ScramSHA256, store); err != nil {
		t.Fatal(err)
	}
	sess, msg, err := scram.Auth{User: "alice", Pass: "pw"}.AsSha256Mechanism().Authenticate(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for done := false; !done; {
		var reply []byte
		if reply, done, err = cs.SASL.Step(msg, time.Minute, start); err != nil {
			t.Fatal(err)
		}
		if _, msg, err = sess.Challenge(reply); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := g.gate(cs, produce); !ok {
		t.Fatal("produce refused after authentication")
	}
	if st := cs.SASL.State(start.Add(time.Minute)); st != sasl.Expired {
		t.Fatalf("state a lifetime later: %v, want expired", st)
	}
	// Re-authentication must keep the mechanism.
	if err := cs.SASL.Handshake(sasl.ScramSHA512, store); !errors.Is(err, sasl.ErrOtherMechanism) {
		t.Fatalf("re-authentication with another mechanism: %v", err)
	}
}
