package replica

import (
	"errors"

	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

// ShutdownPoint is what a replica closed for a node's shutdown leaves for
// the node's shutdown checkpoint, one file for every replica of the data
// dir: its log's recovery point and, if replicated, its group's commit
// index. Both only spare the next start work (a walk of the log's tail,
// a wait for the leader's commit); without them it is as safe.
type ShutdownPoint struct {
	Log    partition.ShutdownPoint
	Commit *raftlog.CommitPoint // nil for a single copy
}

// CloseForShutdown is Close for a node's shutdown: nothing is written
// beside the log that the node's checkpoint records instead.
func (r *Replica) CloseForShutdown() (ShutdownPoint, error) {
	r.shut()
	var p ShutdownPoint
	var raftErr error
	if r.rg != nil {
		c, err := r.rg.closeForShutdown()
		p.Commit, raftErr = c, err
	}
	lp, logErr := r.log.CloseForShutdown()
	p.Log = lp
	return p, errors.Join(raftErr, logErr)
}
