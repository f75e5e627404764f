package sasl

import (
	"context"
	"crypto/pbkdf2"
	"encoding/base64"
	"errors"
	"hash"
	"strings"
	"testing"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// run drives an exchange with a real client mechanism (franz-go's).
func run(t *testing.T, store *Store, mech kgosasl.Mechanism) (string, error) {
	t.Helper()
	ex, err := NewExchange(mech.Name(), store)
	if err != nil {
		t.Fatal(err)
	}
	sess, msg, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		reply, done, err := ex.Step(msg)
		if err != nil {
			return "", err
		}
		clientDone, next, err := sess.Challenge(reply)
		if err != nil {
			return "", err
		}
		if done {
			if !clientDone {
				// SCRAM clients verify the server signature in the last
				// challenge; PLAIN is done after its one message.
				t.Fatalf("server done, client not")
			}
			return ex.User(), nil
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return "", nil
}

func testStore(t *testing.T) *Store {
	s := NewStore()
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		c, err := NewScramCredential(m, "s3cret", MinIteration)
		if err != nil {
			t.Fatal(err)
		}
		s.Set("alice", c)
	}
	return s
}

func TestExchanges(t *testing.T) {
	store := testStore(t)
	for _, tc := range []struct {
		name    string
		mech    kgosasl.Mechanism
		wantErr bool
	}{
		{"scram-256", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism(), false},
		{"scram-512", scram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism(), false},
		{"plain", plain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism(), false},
		{"scram wrong password", scram.Auth{User: "alice", Pass: "nope"}.AsSha512Mechanism(), true},
		{"scram unknown user", scram.Auth{User: "bob", Pass: "s3cret"}.AsSha256Mechanism(), true},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), true},
		{"plain unknown user", plain.Auth{User: "bob", Pass: "s3cret"}.AsMechanism(), true},
		{"plain other identity", plain.Auth{Zid: "root", User: "alice", Pass: "s3cret"}.AsMechanism(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := run(t, store, tc.mech)
			if tc.wantErr {
				if !errors.Is(err, ErrAuthenticationFailed) {
					t.Fatalf("got user %q err %v, want ErrAuthenticationFailed", user, err)
				}
				return
			}
			if err != nil || user != "alice" {
				t.Fatalf("got user %q err %v", user, err)
			}
		})
	}
}

// TestUnknownUserLooksKnown: an unknown user gets a server-first message
// like a known one's, the same salt each time.
func TestUnknownUserLooksKnown(t *testing.T) {
	store := testStore(t)
	first := func(user string) string {
		ex, _ := NewExchange(ScramSHA256, store)
		reply, _, err := ex.Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		_, salt, _ := strings.Cut(string(reply), ",s=")
		return salt
	}
	if a, b := first("mallory"), first("mallory"); a != b || !strings.Contains(a, ",i=4096") {
		t.Fatalf("unknown user's server-first differs between attempts or lacks iterations: %q %q", a, b)
	}
}

func TestCredentialsFileRoundTrip(t *testing.T) {
	// Not a substring base64 can make: the salt and keys on the line are
	// random base64, and "pw" turned up in one of them by chance in CI.
	const password = "a pass phrase!"
	c, err := NewScramCredential(ScramSHA512, password, MinIteration)
	if err != nil {
		t.Fatal(err)
	}
	line := UserCredential{User: "alice", ScramCredential: c}.Format()
	if strings.Contains(line, password) {
		t.Fatal("the line holds the password")
	}
	got, err := ParseCredentials(strings.NewReader("# comment\n\n" + line + "\n"))
	if err != nil || len(got) != 1 || got[0].User != "alice" || !got[0].checkPassword(password) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	for _, bad := range []string{"alice SCRAM-SHA-1 4096 a b c", "alice SCRAM-SHA-256 10 YQ== YQ== YQ==", "only three fields"} {
		if _, err := ParseCredentials(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestLibrdkafkaNonce: librdkafka's client-final repeats the client nonce
// before the server's whole nonce; Kafka accepts it, and so does Spool.
func TestLibrdkafkaNonce(t *testing.T) {
	store := testStore(t)
	ex, _ := NewExchange(ScramSHA256, store)
	const cnonce = "clientnonce"
	first := "n=alice,r=" + cnonce
	serverFirst, _, err := ex.Step([]byte("n,," + first))
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.TrimPrefix(strings.Split(string(serverFirst), ",")[0], "r=")
	cred, _ := store.Lookup("alice", ScramSHA256)
	h := scramHash(ScramSHA256)
	salted, err := pbkdf2Key(h, "s3cret", cred.Salt, cred.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	withoutProof := "c=biws,r=" + cnonce + nonce
	auth := []byte(first + "," + string(serverFirst) + "," + withoutProof)
	clientKey := hmacOf(h, salted, []byte("Client Key"))
	sig := hmacOf(h, cred.StoredKey, auth)
	proof := make([]byte, len(clientKey))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	if _, done, err := ex.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))); err != nil || !done {
		t.Fatalf("librdkafka's final message: done %v, %v", done, err)
	}
}

func pbkdf2Key(h func() hash.Hash, password string, salt []byte, iter int) ([]byte, error) {
	return pbkdf2.Key(h, password, salt, iter, h().Size())
}
