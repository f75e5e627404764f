package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spool-log/spool/adminapi"
)

// GossipKeyOps are the changes ChangeGossipKey makes, in rotation order:
// install the new key everywhere, use it (every member's primary), remove
// the old one.
var GossipKeyOps = []string{"install", "use", "remove"}

// GossipKeys lists the keys every member of the AdminAddr node's cluster
// holds, by fingerprint.
func (g Config) GossipKeys(ctx context.Context) (adminapi.GossipKeyring, error) {
	var r adminapi.GossipKeyring
	return r, g.adminJSON(ctx, "GET", "/v1/gossip-keys", &r)
}

// ChangeGossipKey runs op (install, use or remove) with key (base64 of 32
// bytes) across the cluster, through the AdminAddr node.
func (g Config) ChangeGossipKey(ctx context.Context, op, key string) (adminapi.GossipKeyring, error) {
	var r adminapi.GossipKeyring
	known := false
	for _, o := range GossipKeyOps {
		known = known || o == op
	}
	if !known {
		return r, fmt.Errorf("gossip key operation %q: want one of %s", op, strings.Join(GossipKeyOps, ", "))
	}
	key = strings.TrimSpace(key)
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		return r, fmt.Errorf("gossip key: want base64 of 32 bytes (head -c32 /dev/urandom | base64)")
	}
	body, err := json.Marshal(adminapi.GossipKeyRequest{Key: key})
	if err != nil {
		return r, err
	}
	return r, g.adminJSONBody(ctx, "POST", "/v1/gossip-keys/"+op, body, &r)
}

// WriteGossipKeyring prints a keyring report as a table.
func WriteGossipKeyring(w io.Writer, r adminapi.GossipKeyring) {
	fmt.Fprintf(w, "members %d, answered %d, errors %d\n", r.Members, r.Responses, r.Errors)
	for name, m := range r.Messages {
		fmt.Fprintf(w, "  %s: %s\n", name, m)
	}
	if len(r.Keys) == 0 {
		return
	}
	fmt.Fprintf(w, "%-18s %6s %8s\n", "KEY", "NODES", "PRIMARY")
	for _, k := range r.Keys {
		fmt.Fprintf(w, "%-18s %6d %8d\n", k.Fingerprint, k.Nodes, k.Primary)
	}
}
