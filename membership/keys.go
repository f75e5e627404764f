package membership

// Gossip key rotation, cluster-wide, through Serf's KeyManager: each
// operation is a Serf query that every member answers after changing its
// own keyring (and rewriting its keyring file, when it has one). A
// rotation is install (the new key everywhere), use (it becomes everyone's
// primary), remove (the old one, everywhere). The Raft transport's
// handshake authenticates with the same keyring (Config.Keyring), so it
// follows each step from the next connection on.
//
// Keys never leave this package in the clear but as the caller gave them:
// what is reported names a key by its fingerprint (KeyFingerprint).

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// ErrNotEncrypted: the node's gossip has no keyring, so there is nothing
// to rotate (start every node with --gossip-key-file or --keyring-file).
var ErrNotEncrypted = errors.New("gossip is not encrypted on this node: no keyring to change")

// KeyFingerprint names a key without giving it away: the first 8 bytes of
// its SHA-256, in hex.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// KeyCount is one key as the cluster holds it.
type KeyCount struct {
	Fingerprint string `json:"fingerprint"`
	// Nodes is how many members answered with the key installed, and
	// Primary how many of them use it as their primary.
	Nodes   int `json:"nodes"`
	Primary int `json:"primary"`
}

// KeyringReport is the cluster's answer to a key operation.
type KeyringReport struct {
	Members   int `json:"members"`   // members gossip knows
	Responses int `json:"responses"` // members that answered
	Errors    int `json:"errors"`    // members that answered with an error
	// Messages are the members' error messages, by member name.
	Messages map[string]string `json:"messages,omitempty"`
	// Keys are the keys installed, for list.
	Keys []KeyCount `json:"keys,omitempty"`
}

func keyringReport(r *serf.KeyResponse) KeyringReport {
	out := KeyringReport{Members: r.NumNodes, Responses: r.NumResp, Errors: r.NumErr}
	for name, m := range r.Messages {
		if m == "" {
			continue
		}
		if out.Messages == nil {
			out.Messages = map[string]string{}
		}
		out.Messages[name] = m
	}
	for k, n := range r.Keys {
		raw, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			continue
		}
		out.Keys = append(out.Keys, KeyCount{Fingerprint: KeyFingerprint(raw), Nodes: n, Primary: r.PrimaryKeys[k]})
	}
	sort.Slice(out.Keys, func(i, j int) bool {
		if out.Keys[i].Primary != out.Keys[j].Primary {
			return out.Keys[i].Primary > out.Keys[j].Primary
		}
		return out.Keys[i].Fingerprint < out.Keys[j].Fingerprint
	})
	return out
}

// KeyOp names a key operation.
type KeyOp string

const (
	KeyInstall KeyOp = "install" // add the key to every member's keyring
	KeyUse     KeyOp = "use"     // make it every member's primary (installed first)
	KeyRemove  KeyOp = "remove"  // take it out everywhere (not while it is a primary)
	KeyList    KeyOp = "list"    // what every member holds
)

// ChangeGossipKey runs op cluster-wide with key (ignored for KeyList) and
// reports the members' answers. The error says when a member failed or did
// not answer; the report is filled in either way. It waits for the answers
// (Serf's query timeout), so it is not for an event loop.
func (a *Agent) ChangeGossipKey(op KeyOp, key []byte) (KeyringReport, error) {
	if !a.serf.EncryptionEnabled() {
		return KeyringReport{}, ErrNotEncrypted
	}
	if op != KeyList {
		if err := memberlist.ValidateKey(key); err != nil {
			return KeyringReport{}, fmt.Errorf("gossip key: %w", err)
		}
	}
	km := a.serf.KeyManager()
	enc := base64.StdEncoding.EncodeToString(key)
	var (
		r   *serf.KeyResponse
		err error
	)
	switch op {
	case KeyInstall:
		r, err = km.InstallKey(enc)
	case KeyUse:
		r, err = km.UseKey(enc)
	case KeyRemove:
		r, err = km.RemoveKey(enc)
	case KeyList:
		r, err = km.ListKeys()
	default:
		return KeyringReport{}, fmt.Errorf("key operation %q: want install, use, remove or list", op)
	}
	var rep KeyringReport
	if r != nil {
		rep = keyringReport(r)
	}
	if err != nil {
		return rep, fmt.Errorf("gossip key %s: %w", op, err)
	}
	if op != KeyList {
		a.log.WithField("op", string(op)).WithField("key", KeyFingerprint(key)).
			WithField("members", rep.Members).Info("gossip keyring changed across the cluster")
	}
	return rep, nil
}
