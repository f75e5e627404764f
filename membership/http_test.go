package membership

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPFetchRefusesLoopbackAdminOfRemotePeer: a peer on another machine
// that advertises a loopback admin address (an admin API bound to
// 127.0.0.1) must not be fetched from: the address would reach this
// machine, and anti-entropy would silently merge our own catalog.
func TestHTTPFetchRefusesLoopbackAdminOfRemotePeer(t *testing.T) {
	var hits atomic.Int32
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"clock":0,"topics":[]}`))
	}))
	defer local.Close()
	adminAddr := strings.TrimPrefix(local.URL, "http://")
	fetch := HTTPFetch(local.Client())

	remote := Member{Name: "spool-2", GossipAddr: "10.0.0.2:7946", AdminAddr: adminAddr}
	_, err := fetch(context.Background(), remote, CatalogPath)
	if err == nil || !strings.Contains(err.Error(), "--advertise-admin-addr") {
		t.Fatalf("fetch from a remote peer's loopback admin address: %v, want a refusal naming --advertise-admin-addr", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback address was dialled")
	}

	// Peers on one machine (tests, a laptop cluster) share loopback.
	sameHost := Member{Name: "spool-3", GossipAddr: "127.0.0.1:7947", AdminAddr: adminAddr}
	if _, err := fetch(context.Background(), sameHost, CatalogPath); err != nil {
		t.Fatalf("fetch from a peer on this machine: %v", err)
	}
}

func TestLoopbackAdminOfRemotePeer(t *testing.T) {
	for _, c := range []struct {
		admin, gossip string
		want          bool
	}{
		{"127.0.0.1:9644", "10.0.0.2:7946", true},
		{"[::1]:9644", "[fd00::2]:7946", true},
		{"localhost:9644", "10.0.0.2:7946", true},
		{"10.0.0.2:9644", "10.0.0.2:7946", false},
		{"127.0.0.1:9644", "127.0.0.1:7946", false},
		{"spool-2.internal:9644", "10.0.0.2:7946", false},
	} {
		if got := LoopbackAdminOfRemotePeer(Member{AdminAddr: c.admin, GossipAddr: c.gossip}); got != c.want {
			t.Errorf("admin %s gossip %s: %v, want %v", c.admin, c.gossip, got, c.want)
		}
	}
}
