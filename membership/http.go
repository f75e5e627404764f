package membership

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/spool-log/spool/internal/httpjson"
)

// Paths Agent.Handler serves for anti-entropy. The node mounts the handler on
// its admin listener (the "admin" tag), which is where HTTPFetch looks.
const (
	CatalogPath = "/internal/membership/catalog"
	RosterPath  = "/internal/membership/roster"
)

// maxFetchBytes bounds a catalog or roster fetched from a peer.
const maxFetchBytes = 64 << 20

// Handler serves this node's catalog (CatalogSnapshot, JSON) at CatalogPath
// and roster at RosterPath, for peers doing anti-entropy. Read-only.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CatalogPath, func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, a.catalog.Snapshot())
	})
	mux.HandleFunc("GET "+RosterPath, func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, rosterFileJSON{Entries: a.roster.Entries()})
	})
	return mux
}

// HTTPFetch returns the default FetchFunc: GET http://<peer.AdminAddr><path>
// with client (http.DefaultClient when nil), the body bounded to 64 MiB.
func HTTPFetch(client *http.Client) FetchFunc { return fetchWithScheme(client, "http") }

// HTTPSFetch is HTTPFetch over HTTPS (peers whose admin API is TLS), with
// client's TLS settings.
func HTTPSFetch(client *http.Client) FetchFunc { return fetchWithScheme(client, "https") }

func fetchWithScheme(client *http.Client, scheme string) FetchFunc {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, peer Member, path string) ([]byte, error) {
		if peer.AdminAddr == "" {
			return nil, fmt.Errorf("fetch %s from %s: peer advertises no admin address", path, peer.Name)
		}
		if LoopbackAdminOfRemotePeer(peer) {
			// Dialling it would reach this machine, most likely this
			// node itself, and "succeed" with our own state.
			return nil, fmt.Errorf("fetch %s from %s: peer advertises the loopback admin address %s while its gossip address is %s; start it with --advertise-admin-addr (and its admin API bound where peers reach it)",
				path, peer.Name, peer.AdminAddr, peer.GossipAddr)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+peer.AdminAddr+path, nil)
		if err != nil {
			return nil, fmt.Errorf("fetch %s from %s: %w", path, peer.Name, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s from %s: %w", path, peer.Name, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch %s from %s: HTTP %s", path, peer.Name, resp.Status)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxFetchBytes+1))
		if err != nil {
			return nil, fmt.Errorf("fetch %s from %s: %w", path, peer.Name, err)
		}
		if len(body) > maxFetchBytes {
			return nil, fmt.Errorf("fetch %s from %s: body over %d bytes", path, peer.Name, maxFetchBytes)
		}
		return body, nil
	}
}

// LoopbackAdminOfRemotePeer reports whether m advertises a loopback admin
// address while its gossip address is not loopback: a node on another
// machine then cannot reach its admin API, and dialling the address would
// reach the dialler's own machine instead.
func LoopbackAdminOfRemotePeer(m Member) bool {
	return isLoopbackHostPort(m.AdminAddr) && !isLoopbackHostPort(m.GossipAddr)
}

func isLoopbackHostPort(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
