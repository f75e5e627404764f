package node

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/wire"
)

// The node serves Kafka requests only once the cluster accepted it
// (node/admission has the rules).

// Failed delivers, once, the reason the node cannot serve: the cluster
// refused it. The node then refuses every Kafka request and /readyz and
// /healthz say why; the caller should shut it down and exit.
func (n *Node) Failed() <-chan error { return n.adm.Failed() }

// Admitted reports whether the cluster accepted this node, so that it
// serves Kafka requests.
func (n *Node) Admitted() bool { return n.adm.Admitted() }

// admissionGate is the wire.Handler in front of the node: requests reach
// the node only once it is admitted.
type admissionGate struct{ n *Node }

func (g admissionGate) ServeKafka(ctx context.Context, req *wire.Request) wire.Response {
	if !g.n.adm.Admitted() {
		g.n.log.WithFields(logrus.Fields{"api_key": req.APIKey, "reason": g.n.adm.State()}).
			Debug("closing a Kafka connection: not accepted by the cluster")
		return wire.CloseConnection
	}
	return g.n.ServeKafka(ctx, req)
}
