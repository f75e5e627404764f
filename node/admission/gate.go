package admission

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/wire"
)

// Gate is the wire.Handler in front of the node: requests reach next only
// once the cluster admitted the node; before, each closes its connection.
func (a *Admission) Gate(next wire.Handler) wire.Handler { return gate{a: a, next: next} }

type gate struct {
	a    *Admission
	next wire.Handler
}

func (g gate) ServeKafka(ctx context.Context, req *wire.Request) wire.Response {
	if !g.a.Admitted() {
		g.a.log.WithFields(logrus.Fields{"api_key": req.APIKey, "reason": g.a.State()}).
			Debug("closing a Kafka connection: not accepted by the cluster")
		return wire.CloseConnection
	}
	return g.next.ServeKafka(ctx, req)
}
