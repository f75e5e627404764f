package moves

// Pausing moves (`spool rebalance pause|resume`): a cluster setting in the
// catalog (membership.SettingRebalancePaused), saved and gossiped like the
// users and ACLs, so it survives restarts and reaches every node. While it
// is set:
//
//   - automatic rebalancing starts no move (starts.go), and
//     `spool rebalance apply` refuses to (the client asks first);
//   - an operator's explicit move (`spool partition move`,
//     AlterPartitionReassignments) is still recorded, as Kafka records a
//     reassignment whatever the throttle, but its leader does not step it
//     until resume: it shows in `spool rebalance status`, at its first step;
//   - a move under way takes no further step (step.go asks held): no
//     learner is added, promoted or removed and leadership is not handed
//     off. A learner already added keeps receiving the group's
//     replication, as Raft sends every member the log, so it goes on
//     catching up (throttled as ever) and a resume finds it further on.
//     A joint configuration is the one exception: the leader leaves it,
//     since that ends the promotion already committed rather than starting
//     a step, and a group left joint needs both majorities for every write.
//
// Resume clears the setting and every leader goes on from where its move
// stood: each step is decided afresh from the catalog and the group's
// configuration (step.go), so nothing is remembered across the pause.

// held tells whether p's move must wait: moves are paused and the next
// step is not leaving a joint configuration.
func (m *Mover) held(p Hosted) bool {
	if !m.cfg.Cluster.RebalancePaused() {
		return false
	}
	conf, ok := p.Replica.Conf()
	return !ok || !conf.Joint()
}
