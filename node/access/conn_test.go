package access

import (
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

// quotaClientOf names a client as principalOf does, less "User:", and
// without allocating: it runs on every request while a quota is set.
func TestQuotaClientOf(t *testing.T) {
	id := "app"
	wreq := &wire.Request{ClientID: &id}
	sasl := authenticatedAs(t, "alice")
	tlsPeer := &Conn{tlsPeer: "CN=bob"}
	for _, cs := range []*Conn{nil, {}, sasl, tlsPeer} {
		user, clientID := quotaClientOf(cs, wreq)
		if want := strings.TrimPrefix(principalOf(cs), "User:"); user != want || clientID != "app" {
			t.Errorf("%+v: user %q client id %q, want %q and app", cs, user, clientID, want)
		}
		if n := testing.AllocsPerRun(100, func() { quotaClientOf(cs, wreq) }); n != 0 {
			t.Errorf("%+v: %v allocations", cs, n)
		}
	}
	if user, clientID := quotaClientOf(nil, &wire.Request{}); user != "ANONYMOUS" || clientID != "" {
		t.Errorf("a null client id of an anonymous client: %q %q", user, clientID)
	}
}

// authenticatedAs is a connection whose SASL session authenticated user
// (PLAIN, against a store that has it).
func authenticatedAs(t *testing.T, user string) *Conn {
	t.Helper()
	store := sasl.NewStore()
	c, err := sasl.NewScramCredential(sasl.ScramSHA256, "pw", 4096)
	if err != nil {
		t.Fatal(err)
	}
	store.Set(user, c)
	cs := &Conn{}
	if err := cs.SASL.Handshake(sasl.Plain, store); err != nil {
		t.Fatal(err)
	}
	if _, done, err := cs.SASL.Step([]byte("\x00"+user+"\x00pw"), 0, time.Now()); err != nil || !done {
		t.Fatalf("authenticate %s: %v %v", user, done, err)
	}
	return cs
}
