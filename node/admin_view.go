package node

import (
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/admission"
)

// adminView is the node as the admin API (node/admin) sees it.
type adminView struct{ n *Node }

var _ admin.Node = adminView{}

func (v adminView) Unfit() error {
	if err := v.n.adm.Refusal(); err != nil {
		return err
	}
	if err := v.n.agent.Health(); err != nil && admission.IsRefusal(err) {
		return err
	}
	return nil
}

func (v adminView) Readiness() error   { return v.n.readiness() }
func (v adminView) Stats() admin.Stats { return v.n.Stats() }
func (v adminView) Topics() any        { return v.n.catalog.Topics() }
func (v adminView) PartitionsLed() map[int32]int {
	return v.n.cluster.PartitionsLed(v.n.catalog.Topics())
}
func (v adminView) Leadership(topic string, partition int32) admin.Leadership {
	spec, ok := v.n.catalog.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(spec.Replicas) {
		return admin.Leadership{Leader: -1, LeaderEpoch: -1}
	}
	st := v.n.leaders.Of(spec, partition, v.n.agent.IsAlive)
	return admin.Leadership{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, Offline: st.Offline}
}

// ReadyDetails are /readyz's lines beside "ready": tiered storage's backlog.
func (v adminView) ReadyDetails() []string { return v.n.tier.ReadyDetails() }
