package replica

import "github.com/spool-log/spool/partition"

// LeaderEpochs is the log's leader-epoch cache, oldest first: each epoch
// and the first offset written in it. OffsetForLeaderEpoch answers from it.
func (r *Replica) LeaderEpochs() []partition.EpochEntry { return r.log.LeaderEpochs() }
