package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ring is a test keyring whose keys change under the transport, as
// Serf's KeyManager changes memberlist's.
type ring struct {
	mu   sync.Mutex
	keys [][]byte
}

func newRing(keys ...[]byte) *ring { return &ring{keys: keys} }

func (r *ring) Keys() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.keys)
}

func (r *ring) set(keys ...[]byte) {
	r.mu.Lock()
	r.keys = keys
	r.mu.Unlock()
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func withAuth(r *ring) func(*Config) {
	return func(c *Config) { c.Auth = &AuthConfig{Keys: r.Keys} }
}

// refusedFor is the refused counter of one reason.
func (n *node) refusedFor(reason string) float64 {
	total := 0.0
	for _, iv := range n.sink.Data() {
		for k, c := range iv.Counters {
			if strings.HasPrefix(k, "spool.replication.transport.refused") && strings.Contains(k, "reason="+reason) {
				total += c.Sum
			}
		}
	}
	return total
}

// dialAs runs a hand-made dialler's handshake against n.
func dialAs(t *testing.T, n *node, d Dialler) error {
	t.Helper()
	conn, err := net.Dial("tcp", n.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return d.Handshake(conn, 5*time.Second)
}

func waitRefused(t *testing.T, n *node, reason string, want float64) {
	t.Helper()
	eventually(t, 10*time.Second, "refused{reason="+reason+"}", func() error {
		if got := n.refusedFor(reason); got < want {
			return fmt.Errorf("%v, want %v", got, want)
		}
		return nil
	})
}

func TestAuthRightKeyExchanges(t *testing.T) {
	c := newCluster(t)
	k := newRing(key(1))
	b := c.start(2, "blue", "", withAuth(k))
	a := c.start(1, "blue", "", withAuth(k))
	a.Send(group(1), heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)
	b.Send(group(1), heartbeat(2, 1, 1))
	waitCount(t, a.in, 1)
	if r := b.Stats().Refused + a.Stats().Refused; r != 0 {
		t.Fatalf("%d refused between nodes of one key", r)
	}
}

func TestAuthWrongKeyRefusedBothWays(t *testing.T) {
	c := newCluster(t)
	b := c.start(2, "blue", "", withAuth(newRing(key(1))))
	a := c.start(1, "blue", "", withAuth(newRing(key(2))))
	eventually(t, 10*time.Second, "wrong key reported unreachable", func() error {
		a.Send(group(3), heartbeat(1, 2, 1))
		if a.rep.unreachableFor(group(3)) == 0 {
			return errors.New("not reported")
		}
		return nil
	})
	// The dialler refuses the listener first (its proof is of another
	// key), and tells it so; the listener counts a bad key.
	waitRefused(t, b, "bad_key", 1)
	if got := a.counter("replication.transport.dial_refused"); got == 0 {
		t.Fatal("dialler did not count the listener it refused")
	}
	// A stranger that knows the node ids and the cluster id but not the
	// key, and so cannot check the listener's proof, sends one anyway.
	err := dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "blue", Keys: [][]byte{key(9)}})
	if !errors.Is(err, errPeerUnauthenticated) {
		t.Fatalf("stranger's handshake: %v, want the listener unauthenticated", err)
	}
	if n := b.in.count(); n != 0 {
		t.Fatalf("%d messages delivered across a wrong key", n)
	}

	// A stranger with a listener that proves nothing: the real node
	// dials it and refuses it, and never sends its own proof.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		h, err := readHello(conn)
		if err != nil {
			return
		}
		w := welcome{status: statusOK, node: 3, clusterID: "blue", auth: true}
		w.nonce = h.nonce // reflect the dialler's own nonce back
		conn.Write(w.encode())
		rest, _ := io.ReadAll(conn)
		got <- rest
	}()
	c.mu.Lock()
	c.addrs[3] = ln.Addr().String()
	c.mu.Unlock()
	a.Send(group(4), heartbeat(1, 3, 1))
	select {
	case rest := <-got:
		if !bytes.Equal(rest, make([]byte, macLen)) {
			t.Fatalf("dialler sent %x to a listener that proved nothing, want an all-zero proof", rest)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fake listener saw no handshake")
	}
}

func TestAuthKeyAgainstNoKeyRefused(t *testing.T) {
	c := newCluster(t)
	keyed := c.start(2, "blue", "", withAuth(newRing(key(1))))
	open := c.start(3, "blue", "", nil)

	// No key dialling a keyed node: the listener wants one.
	err := dialAs(t, keyed, Dialler{From: 1, To: 2, ClusterID: "blue"})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), statusText(statusAuthRequired)) {
		t.Fatalf("unauthenticated dialler: %v", err)
	}
	waitRefused(t, keyed, "no_key", 1)
	// A key dialling a node without one: it cannot check it, and says so.
	err = dialAs(t, open, Dialler{From: 1, To: 3, ClusterID: "blue", Keys: [][]byte{key(1)}})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), statusText(statusNoAuth)) {
		t.Fatalf("authenticating dialler to a node without a key: %v", err)
	}
	waitRefused(t, open, "unexpected_key", 1)

	// And between transports: neither way carries a message.
	keyed.Send(group(1), heartbeat(2, 3, 1))
	open.Send(group(1), heartbeat(3, 2, 1))
	eventually(t, 10*time.Second, "both report the other unreachable", func() error {
		keyed.Send(group(1), heartbeat(2, 3, 1))
		open.Send(group(1), heartbeat(3, 2, 1))
		if keyed.rep.unreachableFor(group(1)) == 0 || open.rep.unreachableFor(group(1)) == 0 {
			return errors.New("not both")
		}
		return nil
	})
	if keyed.in.count()+open.in.count() != 0 {
		t.Fatal("messages crossed between a keyed node and one without a key")
	}
}

func TestAuthWrongClusterRefused(t *testing.T) {
	c := newCluster(t)
	k := newRing(key(1))
	b := c.start(2, "blue", "", withAuth(k))
	err := dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "green", Keys: k.Keys()})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), statusText(statusWrongCluster)) {
		t.Fatalf("other cluster with the right key: %v", err)
	}
	waitRefused(t, b, "wrong_cluster", 1)
	// The cluster id is asked at each handshake: once the node settles
	// on "green", green peers are taken and blue ones refused.
	var mu sync.Mutex
	cid := ""
	d := c.start(4, "", "", func(cfg *Config) {
		withAuth(k)(cfg)
		cfg.CurrentClusterID = func() string { mu.Lock(); defer mu.Unlock(); return cid }
	})
	err = dialAs(t, d, Dialler{From: 1, To: 4, ClusterID: "green", Keys: k.Keys()})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), statusText(statusNotReady)) {
		t.Fatalf("before the node knows its cluster id: %v", err)
	}
	mu.Lock()
	cid = "green"
	mu.Unlock()
	if err := dialAs(t, d, Dialler{From: 1, To: 4, ClusterID: "green", Keys: k.Keys()}); err != nil {
		t.Fatalf("once settled: %v", err)
	}
	err = dialAs(t, d, Dialler{From: 1, To: 4, ClusterID: "blue", Keys: k.Keys()})
	if !errors.Is(err, errRefused) {
		t.Fatalf("blue peer of a green node: %v", err)
	}
}

// recorder keeps what is written to and read from a connection.
type recorder struct {
	net.Conn
	mu          sync.Mutex
	wrote, read []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.wrote = append(r.wrote, p...)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.read = append(r.read, p[:n]...)
	r.mu.Unlock()
	return n, err
}

func TestAuthReplayedTranscriptRefused(t *testing.T) {
	c := newCluster(t)
	k := newRing(key(1))
	b := c.start(2, "blue", "", withAuth(k))
	raw, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Conn: raw}
	if err := (Dialler{From: 1, To: 2, ClusterID: "blue", Keys: k.Keys()}).Handshake(rec, 5*time.Second); err != nil {
		t.Fatalf("genuine handshake: %v", err)
	}
	raw.Close()

	// The dialler's side replayed: hello and proof, as recorded.
	conn, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	helloLen := len(rec.wrote) - macLen
	if _, err := conn.Write(rec.wrote[:helloLen]); err != nil {
		t.Fatal(err)
	}
	if _, err := readWelcome(conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(rec.wrote[helloLen:]); err != nil {
		t.Fatal(err)
	}
	var v [1]byte
	if _, err := io.ReadFull(conn, v[:]); err != nil || v[0] != statusBadKey {
		t.Fatalf("replayed proof: verdict %v (%v), want bad key", v, err)
	}
	waitRefused(t, b, "bad_key", 1)

	// The listener's side replayed to a fresh dialler: its nonce is new,
	// so the recorded proof does not cover it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		readHello(conn)
		conn.Write(rec.read) // the welcome and verdict, as recorded
		io.Copy(io.Discard, conn)
	}()
	conn2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	err = (Dialler{From: 1, To: 2, ClusterID: "blue", Keys: k.Keys()}).Handshake(conn2, 5*time.Second)
	if !errors.Is(err, errPeerUnauthenticated) {
		t.Fatalf("replayed welcome: %v, want the listener unauthenticated", err)
	}
}

// A rotation as Serf's KeyManager does it (install everywhere, use, remove)
// keeps every pair of nodes sharing a key at each step; a node left with
// only the old key is refused at the end.
func TestAuthRotationWithTwoKeys(t *testing.T) {
	c := newCluster(t)
	old, next := key(1), key(2)
	rb := newRing(old)
	b := c.start(2, "blue", "", withAuth(rb))
	ra := newRing(old)
	a := c.start(1, "blue", "", withAuth(ra))
	a.Send(group(1), heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)

	steps := []struct {
		name         string
		dialler, lis [][]byte
	}{
		{"before", [][]byte{old}, [][]byte{old}},
		{"installed on the listener only", [][]byte{old}, [][]byte{old, next}},
		{"installed on both", [][]byte{old, next}, [][]byte{old, next}},
		{"dialler uses the new key first", [][]byte{next, old}, [][]byte{old, next}},
		{"listener uses it too", [][]byte{next, old}, [][]byte{next, old}},
		{"listener uses it, dialler not yet", [][]byte{old, next}, [][]byte{next, old}},
		{"old removed on the dialler", [][]byte{next}, [][]byte{next, old}},
		{"old removed everywhere", [][]byte{next}, [][]byte{next}},
	}
	for _, s := range steps {
		rb.set(s.lis...)
		if err := dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "blue", Keys: s.dialler}); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	// A transport's new connections follow its keyring: cut a's
	// connection (b restarts on its port) and the rotated pair still
	// exchanges.
	ra.set(next)
	addr := b.Addr().String()
	b.Close()
	b2 := c.start(2, "blue", addr, withAuth(rb))
	eventually(t, 10*time.Second, "messages after rotation", func() error {
		a.Send(group(1), heartbeat(1, 2, 2))
		if b2.in.count() == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	// Left behind with the old key only: refused.
	err := dialAs(t, b2, Dialler{From: 1, To: 2, ClusterID: "blue", Keys: [][]byte{old}})
	if !errors.Is(err, errPeerUnauthenticated) {
		t.Fatalf("old key after the rotation: %v", err)
	}
}

// Strangers that connect and send nothing, or garbage, are dropped within
// the handshake timeout, counted, and never keep a peer out: one remote IP
// holds at most MaxPendingPerHost handshakes.
func TestAuthSilentAndGarbageStrangersDropped(t *testing.T) {
	c := newCluster(t)
	k := newRing(key(1))
	b := c.start(2, "blue", "", func(cfg *Config) {
		withAuth(k)(cfg)
		cfg.HandshakeTimeout = 500 * time.Millisecond
		cfg.MaxPendingPerHost = 4
	})
	// Strangers from 127.0.0.2 (all of 127/8 is loopback on Linux).
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	var silent []net.Conn
	for i := 0; i < 6; i++ {
		conn, err := d.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		silent = append(silent, conn)
	}
	waitRefused(t, b, "too_many_pending", 2)
	// A peer from another address handshakes while they wait.
	a := c.start(1, "blue", "", withAuth(k))
	start := time.Now()
	a.Send(group(1), heartbeat(1, 2, 1))
	waitCount(t, b.in, 1)
	t.Logf("peer in after %v with strangers pending", time.Since(start))
	// Each silent one is dropped at the deadline.
	for i, conn := range silent {
		waitClosed(t, conn, fmt.Sprintf("silent stranger %d", i))
	}
	waitRefused(t, b, "timeout", 4)

	// Garbage: refused at once, not at the deadline.
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		append([]byte("SPRT\x02"), bytes.Repeat([]byte{0xff}, 100)...), // cluster id length 255
		append([]byte("SPRT\x09"), make([]byte, 40)...),                // unknown version
	} {
		conn, err := d.Dial("tcp", b.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(junk)
		waitClosed(t, conn, fmt.Sprintf("garbage %q", junk[:5]))
		conn.Close()
	}
	waitRefused(t, b, "handshake", 3)
	if n := b.in.count(); n != 1 {
		t.Fatalf("%d messages delivered, want only the peer's one", n)
	}
}

// While a new cluster settles on one id, a member of this node's gossip
// cluster may still advertise its own: its handshake is taken, bound to
// the id it claims, both ways; a peer claiming an id its gossip view does
// not show for it is still refused.
func TestAuthClusterSettlingAccepted(t *testing.T) {
	c := newCluster(t)
	k := newRing(key(1))
	gossip := func(node uint64) string {
		if node == 1 {
			return "green" // broker 1 has not adopted blue yet
		}
		return ""
	}
	b := c.start(2, "blue", "", func(cfg *Config) { withAuth(k)(cfg); cfg.PeerClusterID = gossip })
	// The listener takes it; a dialler that does not know the listener's
	// id as its cluster's then refuses the answer itself.
	if err := dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "green", Keys: k.Keys()}); err == nil || !strings.Contains(err.Error(), `of cluster "blue"`) {
		t.Fatalf("a dialler strict on its own id: %v", err)
	}
	// One whose gossip shows the listener advertising blue goes on,
	// both proving the key over the dialler's id.
	if err := dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "green", Keys: k.Keys(),
		SameCluster: func(node uint64, id string) bool { return node == 2 && id == "blue" }}); err != nil {
		t.Fatalf("a member still on its own id: %v", err)
	}
	waitRefused(t, b, "wrong_cluster", 0)
	err := dialAs(t, b, Dialler{From: 3, To: 2, ClusterID: "green", Keys: k.Keys()})
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), statusText(statusWrongCluster)) {
		t.Fatalf("a peer gossip does not show on that id: %v", err)
	}
	err = dialAs(t, b, Dialler{From: 1, To: 2, ClusterID: "red", Keys: k.Keys()})
	if !errors.Is(err, errRefused) {
		t.Fatalf("a member claiming an id it does not advertise: %v", err)
	}
}
