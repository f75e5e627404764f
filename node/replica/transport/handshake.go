package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The handshake's messages and their decoders. Version 1 names the two
// nodes and the cluster and proves nothing; version 2 (auth.go) adds a
// nonce from each side and an HMAC from each side over both, so both ends
// prove they hold a key of the cluster's gossip keyring. A node with
// Config.Auth speaks and accepts version 2 only; one without, version 1
// only, and each tells the other which it wants in its refusal.

const (
	magic                = "SPRT"
	version         byte = 1 // unauthenticated
	versionAuth     byte = 2 // authenticated with the keyring (auth.go)
	nonceLen             = 32
	macLen               = 32 // HMAC-SHA256
	verdictLen           = 1
	maxHelloLen          = 4 + 1 + 16 + 1 + maxClusterIDLen + nonceLen
	maxWelcomeLen        = 4 + 1 + 1 + 8 + 1 + maxClusterIDLen + nonceLen + macLen
	maxClusterIDLen      = 64 // membership's bound on a cluster id

	statusOK           byte = 0
	statusWrongCluster byte = 1
	statusWrongNode    byte = 2
	statusBadVersion   byte = 3
	// statusAuthRequired: the listener authenticates with a key and the
	// dialler offered none (version 1).
	statusAuthRequired byte = 4
	// statusNoAuth: the dialler offered authentication (version 2) and
	// the listener has no key to check it with.
	statusNoAuth byte = 5
	// statusBadKey: the dialler's proof was not made with any key of the
	// listener's keyring (the verdict after a version-2 welcome).
	statusBadKey byte = 6
	// statusNotReady: the listener knows no cluster id or key yet (it is
	// starting); the dialler retries.
	statusNotReady byte = 7
)

// hello is what the dialler sends: who it is, whom it means, its cluster,
// and with auth its nonce (version 2).
type hello struct {
	from, to  uint64
	clusterID string
	auth      bool
	nonce     [nonceLen]byte
}

// welcome is the listener's answer; with auth its nonce and its proof.
type welcome struct {
	status    byte
	node      uint64
	clusterID string
	auth      bool
	nonce     [nonceLen]byte
	mac       [macLen]byte
}

// errRefused marks a handshake the other side refused; the dialler backs off.
var errRefused = errors.New("handshake refused")

func appendClusterID(b []byte, cid string) []byte {
	b = append(b, byte(len(cid)))
	return append(b, cid...)
}

func (h hello) version() byte {
	if h.auth {
		return versionAuth
	}
	return version
}

func (h hello) encode() []byte {
	b := make([]byte, 0, maxHelloLen)
	b = append(b, magic...)
	b = append(b, h.version())
	b = binary.BigEndian.AppendUint64(b, h.from)
	b = binary.BigEndian.AppendUint64(b, h.to)
	b = appendClusterID(b, h.clusterID)
	if h.auth {
		b = append(b, h.nonce[:]...)
	}
	return b
}

func (w welcome) encode() []byte {
	v := version
	if w.auth {
		v = versionAuth
	}
	b := make([]byte, 0, maxWelcomeLen)
	b = append(b, magic...)
	b = append(b, v, w.status)
	b = binary.BigEndian.AppendUint64(b, w.node)
	b = appendClusterID(b, w.clusterID)
	if w.auth {
		b = append(b, w.nonce[:]...)
		b = append(b, w.mac[:]...)
	}
	return b
}

// errBadVersion marks a hello of a version this node does not speak at
// all; the listener answers statusBadVersion.
var errBadVersion = errors.New("unsupported handshake version")

// readPrefix reads the magic and version; a wrong magic means this is not
// a Spool Raft peer at all (the wrong port, or a stray client).
func readPrefix(r io.Reader) (byte, error) {
	var b [5]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("read handshake: %w", err)
	}
	if string(b[:4]) != magic {
		return 0, fmt.Errorf("handshake magic %q, not %q", b[:4], magic)
	}
	if b[4] != version && b[4] != versionAuth {
		return b[4], fmt.Errorf("handshake version %d, this node speaks %d and %d: %w", b[4], version, versionAuth, errBadVersion)
	}
	return b[4], nil
}

func readClusterID(r io.Reader) (string, error) {
	var l [1]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return "", fmt.Errorf("read cluster id length: %w", err)
	}
	if int(l[0]) > maxClusterIDLen {
		return "", fmt.Errorf("cluster id length %d over %d", l[0], maxClusterIDLen)
	}
	b := make([]byte, l[0])
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("read cluster id: %w", err)
	}
	return string(b), nil
}

// readHello reads a dialler's hello, of either version; at most
// maxHelloLen bytes are read, whatever the peer sends.
func readHello(r io.Reader) (hello, error) {
	v, err := readPrefix(r)
	if err != nil {
		return hello{}, err
	}
	var ids [16]byte
	if _, err := io.ReadFull(r, ids[:]); err != nil {
		return hello{}, fmt.Errorf("read handshake node ids: %w", err)
	}
	cid, err := readClusterID(r)
	if err != nil {
		return hello{}, err
	}
	h := hello{from: binary.BigEndian.Uint64(ids[:8]), to: binary.BigEndian.Uint64(ids[8:]), clusterID: cid}
	if v == versionAuth {
		h.auth = true
		if _, err := io.ReadFull(r, h.nonce[:]); err != nil {
			return hello{}, fmt.Errorf("read handshake nonce: %w", err)
		}
	}
	return h, nil
}

// readWelcome reads a listener's answer, of either version (a listener
// answers a hello it cannot take in the version it speaks).
func readWelcome(r io.Reader) (welcome, error) {
	v, err := readPrefix(r)
	if err != nil {
		return welcome{}, err
	}
	var b [9]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return welcome{}, fmt.Errorf("read handshake answer: %w", err)
	}
	cid, err := readClusterID(r)
	if err != nil {
		return welcome{}, err
	}
	w := welcome{status: b[0], node: binary.BigEndian.Uint64(b[1:]), clusterID: cid}
	if v == versionAuth {
		w.auth = true
		if _, err := io.ReadFull(r, w.nonce[:]); err != nil {
			return welcome{}, fmt.Errorf("read handshake nonce: %w", err)
		}
		if _, err := io.ReadFull(r, w.mac[:]); err != nil {
			return welcome{}, fmt.Errorf("read handshake proof: %w", err)
		}
	}
	return w, nil
}

func statusText(s byte) string {
	switch s {
	case statusOK:
		return "ok"
	case statusWrongCluster:
		return "another cluster"
	case statusWrongNode:
		return "not the node dialled"
	case statusBadVersion:
		return "unsupported version"
	case statusAuthRequired:
		return "the node requires authentication with the cluster's gossip key, and this one has none"
	case statusNoAuth:
		return "the node has no gossip key to authenticate with, and this one requires one"
	case statusBadKey:
		return "proof not made with any key of the node's gossip keyring"
	case statusNotReady:
		return "the node is starting (no cluster id or key yet)"
	}
	return fmt.Sprintf("status %d", s)
}
