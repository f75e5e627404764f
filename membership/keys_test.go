package membership

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// A rotation through ChangeGossipKey changes every member's keyring,
// including the one a caller shared through Config.Keyring (the node's
// Raft transport reads that one), and is reported by fingerprint only.
func TestChangeGossipKeyRotatesTheSharedKeyring(t *testing.T) {
	log := newTestLogger(t)
	old, next := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	ringA, err := BuildKeyring(old, "")
	if err != nil {
		t.Fatal(err)
	}
	a := startNode(t, log, 1, func(c *Config) { c.Keyring = ringA })
	ringFile := t.TempDir() + "/keyring"
	b := startNode(t, log, 2, withKey(old), withKeyring(ringFile))
	b.join(t, a)
	retry.Run(t, 10*time.Second, wantStatus(a.Agent, "node-2", StatusAlive))

	for _, op := range []KeyOp{KeyInstall, KeyUse} {
		rep, err := a.ChangeGossipKey(op, next)
		if err != nil || rep.Members != 2 || rep.Responses != 2 || rep.Errors != 0 {
			t.Fatalf("%s: %+v, %v", op, rep, err)
		}
	}
	if k := ringA.GetPrimaryKey(); !bytes.Equal(k, next) {
		t.Fatal("the shared keyring's primary is not the new key after use")
	}
	// The primary cannot be removed; the old key can.
	if _, err := a.ChangeGossipKey(KeyRemove, next); err == nil {
		t.Fatal("removed the primary key")
	}
	if _, err := a.ChangeGossipKey(KeyRemove, old); err != nil {
		t.Fatal(err)
	}
	if keys := ringA.GetKeys(); len(keys) != 1 || !bytes.Equal(keys[0], next) {
		t.Fatalf("shared keyring holds %d keys after remove", len(keys))
	}
	rep, err := b.ChangeGossipKey(KeyList, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Keys) != 1 || rep.Keys[0].Fingerprint != KeyFingerprint(next) || rep.Keys[0].Nodes != 2 || rep.Keys[0].Primary != 2 {
		t.Fatalf("list after the rotation: %+v", rep)
	}
	// Serf rewrote b's keyring file with the new key only.
	raw, err := readFileString(ringFile)
	if err != nil || strings.Count(raw, `"`) != 2 {
		t.Fatalf("keyring file after the rotation: %q, %v", raw, err)
	}
	if _, err := a.ChangeGossipKey(KeyInstall, []byte("short")); err == nil {
		t.Fatal("installed a key of 5 bytes")
	}
}

func TestChangeGossipKeyWithoutEncryption(t *testing.T) {
	a := startNode(t, newTestLogger(t), 1)
	if _, err := a.ChangeGossipKey(KeyList, nil); !errors.Is(err, ErrNotEncrypted) {
		t.Fatalf("list on a plaintext node: %v", err)
	}
}

func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
