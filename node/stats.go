package node

import (
	"sort"

	"github.com/spool-log/spool/node/admin"
)

// Stats returns the node's counters.
func (n *Node) Stats() admin.Stats {
	s := admin.Stats{
		NodeID:    n.cfg.NodeID,
		KafkaAddr: n.KafkaAddr(),
		Ready:     n.Ready(),
		Topics:    len(n.catalog.Topics()),
		BytesIn:   n.stats.bytesIn.Load(),
		RecordsIn: n.stats.recordsIn.Load(),
		BatchesIn: n.stats.batchesIn.Load(),
		BytesOut:  n.stats.bytesOut.Load(),
		OpenFiles: n.files.OpenFiles(),
	}
	if n.server != nil {
		ws := n.server.Stats()
		s.SendfileBytes = int64(ws.SendfileBytes)
		s.CopyBytes = int64(ws.CopyBytes)
		s.RequestsTotal = int64(ws.RequestsTotal)
		s.OpenConnections = int64(ws.OpenConnections)
		s.TLSHandshakeFailures = ws.TLSHandshakeFailures
	}
	s.SASLAuthentications, s.SASLAuthenticationFailures = n.access.SASLCounts()
	for _, p := range n.localPartitions() {
		s.PartitionStats = append(s.PartitionStats, admin.PartitionStats{
			Topic: p.Topic, Partition: p.Index,
			StartOffset: p.Replica.LogStartOffset(), EndOffset: p.Replica.LogEndOffset(),
		})
	}
	sort.Slice(s.PartitionStats, func(i, j int) bool {
		a, b := s.PartitionStats[i], s.PartitionStats[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	s.Partitions = len(s.PartitionStats)
	return s
}
