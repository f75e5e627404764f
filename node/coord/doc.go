// Package coord hosts the broker's coordinators on a node: the consumer
// group coordinator (node/group: Groups), the transaction coordinator
// (node/txn: Txns) and the share groups with their state store
// (node/share: share.Node over a Host of share.Store). What they have in
// common is one Host: the internal topic (__consumer_offsets,
// __transaction_state, __share_group_state) created on first use with its
// replication factor capped by the roster, so that nodes creating it at
// once make one spec; the coordinator made once after it; and the
// partitions of that topic this node leads, each loaded (replayed from the
// log) in the leader epoch it leads in, unloaded when it stops leading.
// Commits go through the partitions' replicas (internalLog); requests for a
// partition led elsewhere go to its leader's admin listener
// (Broker.PostToBroker, node/peers).
//
// It knows the node only through Broker, which the node implements with an
// adapter; it never imports package node.
//
// Locks, none held across a Raft round, an fsync, a network call or a log
// scan, except as named:
//
//	Host.createMu        the topic's creation and the coordinator's making,
//	                     once per node (a failed one is retried); only the
//	                     coordinator's first requests wait on it
//	partitionLoads' per-partition lock -> its mu
//	                     one replay (a log scan) of a partition at a time;
//	                     only the requests for that partition wait on it;
//	                     mu (the map of locks) is a leaf
//
// The coordinators' own locks are theirs (node/group, node/txn,
// node/share); none is held while this package calls them.
package coord
