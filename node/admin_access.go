package node

// Who may call this node's admin API (node/admin/access.go decides) and
// the credential the node itself presents to its peers' admin APIs: the
// admin token, so that anti-entropy, leadership and snapshot pulls pass
// a peer that requires it for reads.

import (
	"net/http"

	"github.com/spool-log/spool/node/admin"
)

// adminAccess is the admin API's authorization from the config, with a
// warning when anyone who reaches the admin port may change state.
func (n *Node) adminAccess() admin.Access {
	access := admin.Access{
		Token:         n.adminToken,
		TokenForReads: n.cfg.AdminTokenForReads,
		ClientCerts:   n.adminTLS != nil && n.adminTLS.MutualTLS(),
	}
	if access.Open() && n.cfg.AdminAddr != "" {
		n.log.WithField("admin_addr", n.cfg.AdminAddr).Warn("the admin API takes state changes (decommission, quarantine purge) from anyone who reaches it: give --admin-token-file or admin mTLS (--admin-tls-client-ca-file)")
	}
	return access
}

// withAdminToken makes client present the admin token on every request,
// when the node has one.
func (n *Node) withAdminToken(client *http.Client) *http.Client {
	if n.adminToken != nil {
		client.Transport = admin.BearerTransport{Base: client.Transport, Token: n.adminToken}
	}
	return client
}
