// Package membership owns Spool's cluster view: the Serf agent every node runs,
// the tags it gossips about itself, the roster of broker ids ever seen alive,
// rendezvous placement of partition replicas, and the topic catalog that gossip
// spreads and anti-entropy repairs.
//
// Serf is the only source of liveness. Nothing here decides leadership or moves
// data: the catalog records where each partition's replicas were placed when the
// topic was created, and the node turns that plus liveness into Metadata (the
// leader of a partition is its first live replica).
//
// On disk, under Config.DataDir:
//
//	serf.snapshot   Serf's member snapshot, used to rejoin after a restart
//	generation      boot counter, incremented on every start (tag "gen")
//	roster.json     the add-wins roster with decommission tombstones
//	catalog.json    the topic catalog, tombstones included
//
// Every file but Serf's own is written atomically (temp, fsync, rename, fsync dir).
//
// A node uses it like this: Create the Agent before serving, mount
// Agent.Handler on the admin listener (anti-entropy fetches catalogs and
// rosters from there), run Join in the background with the --join seeds while
// /readyz follows Health, call WatchTopics then Topics to open local
// partitions, answer Metadata from LiveBrokers and each TopicEntry's replicas
// (Leader / PreferredLeader), create and delete topics with CreateTopic and
// DeleteTopic, and on SIGTERM call Leave then Shutdown.
package membership
