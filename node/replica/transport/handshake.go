package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	magic        = "SPRT"
	version byte = 1

	maxClusterIDLen = 64 // membership's bound on a cluster id

	statusOK           byte = 0
	statusWrongCluster byte = 1
	statusWrongNode    byte = 2
	statusBadVersion   byte = 3
)

// hello is what the dialler sends: who it is, whom it means, and its cluster.
type hello struct {
	from, to  uint64
	clusterID string
}

// welcome is the listener's answer.
type welcome struct {
	status    byte
	node      uint64
	clusterID string
}

// errRefused marks a handshake the other side refused; the dialler backs off.
var errRefused = errors.New("handshake refused")

func appendClusterID(b []byte, cid string) []byte {
	b = append(b, byte(len(cid)))
	return append(b, cid...)
}

func (h hello) encode() []byte {
	b := make([]byte, 0, 4+1+16+1+len(h.clusterID))
	b = append(b, magic...)
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, h.from)
	b = binary.BigEndian.AppendUint64(b, h.to)
	return appendClusterID(b, h.clusterID)
}

func (w welcome) encode() []byte {
	b := make([]byte, 0, 4+1+1+8+1+len(w.clusterID))
	b = append(b, magic...)
	b = append(b, version, w.status)
	b = binary.BigEndian.AppendUint64(b, w.node)
	return appendClusterID(b, w.clusterID)
}

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

// readHello reads a dialler's hello. A version other than ours is returned
// with the error so the listener can answer statusBadVersion.
func readHello(r io.Reader) (hello, error) {
	v, err := readPrefix(r)
	if err != nil {
		return hello{}, err
	}
	if v != version {
		return hello{}, fmt.Errorf("handshake version %d, this node speaks %d", v, version)
	}
	var ids [16]byte
	if _, err := io.ReadFull(r, ids[:]); err != nil {
		return hello{}, fmt.Errorf("read handshake node ids: %w", err)
	}
	cid, err := readClusterID(r)
	if err != nil {
		return hello{}, err
	}
	return hello{from: binary.BigEndian.Uint64(ids[:8]), to: binary.BigEndian.Uint64(ids[8:]), clusterID: cid}, nil
}

func readWelcome(r io.Reader) (welcome, error) {
	v, err := readPrefix(r)
	if err != nil {
		return welcome{}, err
	}
	if v != version {
		return welcome{}, fmt.Errorf("peer answers handshake version %d, this node speaks %d", v, version)
	}
	var b [9]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return welcome{}, fmt.Errorf("read handshake answer: %w", err)
	}
	cid, err := readClusterID(r)
	if err != nil {
		return welcome{}, err
	}
	return welcome{status: b[0], node: binary.BigEndian.Uint64(b[1:]), clusterID: cid}, nil
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
	}
	return fmt.Sprintf("status %d", s)
}
