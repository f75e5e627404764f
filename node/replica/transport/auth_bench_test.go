package transport

import (
	"net"
	"testing"
	"time"
)

// BenchmarkHandshake measures one connection's handshake over loopback,
// unauthenticated and with a keyring of two keys (the rotation's middle),
// so the authenticated one's cost is read as a ratio to the plain one:
//
//	go test ./node/replica/transport/ -run '^$' -bench Handshake
func BenchmarkHandshake(b *testing.B) {
	for _, tc := range []struct {
		name string
		keys [][]byte
	}{{"plain", nil}, {"keyring", [][]byte{key(2), key(1)}}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newCluster(b)
			var mod func(*Config)
			if tc.keys != nil {
				// The listener holds the dialler's key second: the
				// slower path, both keys tried.
				mod = withAuth(newRing(key(1), key(2)))
			}
			n := c.start(2, "blue", "", mod)
			d := Dialler{From: 1, To: 2, ClusterID: "blue", Keys: tc.keys}
			b.ResetTimer()
			for range b.N {
				conn, err := net.Dial("tcp", n.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Handshake(conn, 5*time.Second); err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
		})
	}
}
