package transport

// Authentication with the cluster's gossip keyring (handshake version 2).
//
// Without Raft TLS, all that kept a stranger from voting, appending or
// installing a snapshot was the dialler's word for its node id. With
// Config.Auth each connection starts with a challenge-response that both
// ends must pass:
//
//	dialler  -> hello   from, to, clusterID, nonceD (32 random bytes)
//	listener -> welcome status, node, clusterID, nonceL, macL
//	dialler  -> proof   macD
//	listener -> verdict status
//
// macL = HMAC-SHA256(K, "listener" || T) and macD = HMAC-SHA256(K,
// "dialler" || T), where T binds the cluster id, both node ids and both
// nonces, and K = HMAC-SHA256(gossip key, authKeyLabel), so the gossip
// key itself is never used for anything but gossip. Each side proves with
// its keyring's primary key and accepts a proof made with any key of its
// ring, so Serf's rotation (install the new key everywhere, make it
// primary, remove the old one) keeps every pair of nodes sharing a key at
// each step, and replication keeps going. Fresh nonces from both sides
// make a recorded transcript worthless on another connection; the role
// labels keep one side's proof from being reflected as the other's.
//
// What this does not give: the frames after the handshake are neither
// encrypted nor authenticated, so an attacker on the path who can take
// over an established TCP connection can still inject; Raft TLS covers
// that.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// AuthConfig makes the handshake authenticate both ends with a shared
// key (the cluster's gossip keyring).
type AuthConfig struct {
	// Keys returns the keys of the keyring, the one this node proves
	// with (the primary) first. It is called for every handshake, so a
	// rotated keyring counts from the next connection on; established
	// connections stay up. An empty answer refuses every handshake
	// (statusNotReady). Must be safe for concurrent use and not block.
	Keys func() [][]byte
}

// authKeyLabel separates the key the handshake uses from the gossip key
// it is derived from.
const authKeyLabel = "spool raft transport handshake key v2"

// deriveAuthKey is the handshake's key for one gossip key.
func deriveAuthKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(authKeyLabel))
	return m.Sum(nil)
}

// transcript is what both proofs cover.
type transcript struct {
	clusterID              string
	from, to               uint64 // the dialler, the listener
	dialNonce, listenNonce [nonceLen]byte
}

const (
	roleListener = "listener"
	roleDialler  = "dialler"
)

// mac is role's proof over t with the handshake key derived from secret.
func (t *transcript) mac(secret []byte, role string) [macLen]byte {
	m := hmac.New(sha256.New, deriveAuthKey(secret))
	var b []byte
	b = append(b, magic...)
	b = append(b, versionAuth)
	b = append(b, byte(len(role)))
	b = append(b, role...)
	b = appendClusterID(b, t.clusterID)
	b = binary.BigEndian.AppendUint64(b, t.from)
	b = binary.BigEndian.AppendUint64(b, t.to)
	b = append(b, t.dialNonce[:]...)
	b = append(b, t.listenNonce[:]...)
	m.Write(b)
	var out [macLen]byte
	copy(out[:], m.Sum(nil))
	return out
}

// verify reports whether got is role's proof over t with any of keys.
// Every key is tried (no early exit), so the time taken does not say
// which key matched.
func (t *transcript) verify(keys [][]byte, role string, got [macLen]byte) bool {
	ok := false
	for _, k := range keys {
		want := t.mac(k, role)
		if hmac.Equal(want[:], got[:]) {
			ok = true
		}
	}
	return ok
}

func newNonce() ([nonceLen]byte, error) {
	var n [nonceLen]byte
	if _, err := rand.Read(n[:]); err != nil {
		return n, fmt.Errorf("draw handshake nonce: %w", err)
	}
	return n, nil
}
