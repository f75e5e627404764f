// Package membership owns Spool's cluster view: the Serf agent every node runs,
// the tags it gossips about itself, the roster of broker ids ever seen alive,
// rendezvous placement of partition replicas, and the topic catalog that gossip
// spreads and anti-entropy repairs, which also holds the cluster's SCRAM users
// (user.go, users.go: salts and keys, never passwords, by the same rules) and
// ACLs (acl.go, acls.go); users and ACLs share one merge, save and spread
// path (catalog_set.go, entry_kind.go).
//
// Serf is the only source of liveness. Nothing here decides leadership or moves
// data: the catalog records where each partition's replicas were placed when the
// topic was created, and the moves under way (topic_move.go: a partition's target
// replica list, which its Raft leader carries out and ends by making it the replica
// list), and the node turns that plus liveness into Metadata (the
// leader of a partition is its first live replica). The node's own word on the
// partitions it leads travels beside: SetLeadershipTag publishes the version of
// its claims in the "lv" tag (Member.Leadership), and peers pull the claims
// from the node (node/leadership).
//
// On disk, under Config.DataDir:
//
//	serf.snapshot   Serf's member snapshot, used to rejoin after a restart
//	generation      boot counter, incremented on every start (tag "gen")
//	roster.json     the add-wins roster with decommission tombstones
//	catalog.json    the topic catalog, SCRAM users and ACLs, tombstones included
//	cluster-id.json the cluster-wide id adopted so far (tag "cid"; the
//	                oldest proposal wins, see clusterid.go)
//	raft-addrs.json every broker's last advertised Raft address, a hint for
//	                before gossip has rejoined (raftaddrs.go)
//
// Every file but Serf's own is written atomically (temp, fsync, rename, fsync
// dir; raft-addrs.json, a hint, without the fsyncs).
//
// Topic ids are derived, not drawn (deriveTopicID): a create made from the
// same history (the tombstone it replaces, or none) with the same spec gets
// the same id and the same Lamport time on every node, so a node that
// auto-creates a topic it has not yet heard of creates the same topic, and
// the merge keeps every partition's data. CreateTopic documents what a
// conflict with a different spec costs.
//
// A node uses it like this: Create the Agent before serving, mount
// Agent.Handler on the admin listener (anti-entropy fetches catalogs and
// rosters from there), run Join in the background with the --join seeds while
// /readyz follows Health, report ClusterID in Metadata, call WatchTopics then Topics to open local
// partitions, answer Metadata from LiveBrokers and each TopicEntry's replicas
// (Leader / PreferredLeader), create and delete topics with CreateTopic and
// DeleteTopic, and on SIGTERM call Leave then Shutdown.
//
// Locking. An Agent has four mutexes, taken in this order, never the
// reverse:
//
//	opMu -> persistMu -> mu
//	tagMu -> mu
//
// What each serializes or guards:
//
//   - opMu serializes this node's own topic and user operations (create,
//     delete, alter, upsert), which read the catalog, then merge into it.
//   - persistMu orders the saves of the roster, the catalog and the cluster
//     id, each made durable before memory and watchers take it; it is held
//     across those file writes and their fsyncs, and over nothing on the
//     network. Serf's event loop waits on it only to save what gossip told
//     it (durable before visible); queries and stagings from that loop do
//     not take it.
//   - tagMu orders republishing this node's tags (publishTags), held across
//     serf.SetTags, which waits on the network; it is taken with no other
//     Agent lock held and nothing else waits on it.
//   - mu guards small state read from Serf's event loop and by callers: the
//     cluster id and the winning one seen, the roster entries staged for the
//     next save, the join error, shutdown. It is held over memory only.
//
// The Roster, Catalog, conflict guard, Raft address book and event fan-outs
// have their own mutexes, leaves taken last and held over memory only.
package membership
