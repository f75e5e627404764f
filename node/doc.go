// Package node is Spool's broker: it owns the topic catalog and the local
// partition logs, answers the Kafka APIs that clients send through package
// wire (produce, fetch, list offsets, metadata, topic admin, producer ids),
// runs retention, and wires the parts in its sub-folders together: consumer
// groups (node/group), the admin HTTP API and metrics (node/admin), the data
// directory's lock and quarantine (node/datadir) and the scrubber
// (node/scrub). Every background goroutine starts in Start under one owner
// (background.go) and ends, waited for, in Shutdown.
//
// Each Kafka API has its own file named after its key (00_produce.go,
// 01_fetch.go, ...), kfake style; apis.go holds the one table of supported
// versions and the dispatch. Cluster-wide knowledge (which brokers are alive,
// which replicas a partition has, which topics exist) comes from the node's
// membership agent (package membership), started in Start: a node alone is a
// cluster of one, on the same code path. Handlers, the group coordinator's
// offsets log and the background loops reach a partition's log only through
// its replica (node/replica): leadership, leader epoch, appends with acks,
// reads up to the high watermark, long-poll wake-ups. Who leads the
// partitions this node does not lead, in which epoch, comes from the
// leaders' own claims, spread by node/leadership (leaders.go). Until replication lands a
// partition's data lives on its first replica only, which leads while alive;
// otherwise the partition is unavailable, never silently moved.
package node
