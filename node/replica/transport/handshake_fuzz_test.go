package transport

import (
	"bytes"
	"testing"
)

// FuzzHandshakeDecode feeds any bytes to the handshake's decoders, as a
// stranger on the Raft port (readHello) or a fake listener (readWelcome)
// would: they must never panic nor read past their bound, and what they
// accept must encode back to the bytes they consumed.
func FuzzHandshakeDecode(f *testing.F) {
	var n [nonceLen]byte
	for i := range n {
		n[i] = byte(i)
	}
	f.Add(hello{from: 1, to: 2, clusterID: "spool-abc"}.encode())
	f.Add(hello{from: 1, to: 2, clusterID: "c", auth: true, nonce: n}.encode())
	f.Add(welcome{status: statusOK, node: 2, clusterID: "c"}.encode())
	f.Add(welcome{status: statusBadKey, node: 2, clusterID: "c", auth: true, nonce: n}.encode())
	f.Add([]byte("SPRT\x02"))
	f.Add([]byte("SPRT\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\xff"))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if h, err := readHello(r); err == nil {
			used := len(b) - r.Len()
			if used > maxHelloLen {
				t.Fatalf("hello read %d bytes, over %d", used, maxHelloLen)
			}
			if enc := h.encode(); !bytes.Equal(enc, b[:used]) {
				t.Fatalf("hello %+v encodes to %x, read from %x", h, enc, b[:used])
			}
		}
		r = bytes.NewReader(b)
		if w, err := readWelcome(r); err == nil {
			used := len(b) - r.Len()
			if used > maxWelcomeLen {
				t.Fatalf("welcome read %d bytes, over %d", used, maxWelcomeLen)
			}
			if enc := w.encode(); !bytes.Equal(enc, b[:used]) {
				t.Fatalf("welcome %+v encodes to %x, read from %x", w, enc, b[:used])
			}
		}
	})
}
