// Package node is Spool's broker: the Kafka API handlers and the wiring that
// builds a Node from its parts.
//
// Each Kafka API has its own file named after its key (00_produce.go,
// 01_fetch.go, ...), kfake style, opening with its behaviour and version
// notes; apis.go holds the one table of supported versions and the dispatch.
// Cluster-wide knowledge (which brokers are alive, which replicas a partition
// has, which topics exist) comes from the node's membership agent (package
// membership): a node alone is a cluster of one, on the same code path.
// Handlers, the coordinators' logs and the background loops reach a
// partition's log only through its replica (node/replica). Who leads a
// partition has one answer, partitionLeadership (leaders.go): the replica's
// word where this node leads it, else the newest of the replica's view and
// the leader's claim (node/leadership), else the cluster view. Every
// background goroutine starts under one owner (background.go) and ends,
// waited for, before the parts it uses stop (stopParts, shared by Shutdown
// and a failed Start).
//
// The house (see DESIGN.md):
//
//	node/            handlers, wiring, and what only the node knows of the
//	                 partitions it hosts: how one opens (openPartition),
//	                 what the catalog says of each (dropReason,
//	                 stillVoting), wired into hosted.Set (partitions.go)
//	node/hosted      the partitions this node hosts: the set of open ones
//	                 with their reconcile, mend, close and shutdown
//	                 checkpoint (hosted.Set), and each
//	                 (hosted.Partition, localPartition here) with its
//	                 replica and settings and what it keeps beside its log:
//	                 producer state with the idempotent and transactional
//	                 appends under its append lock, and the transaction
//	                 index (read_committed)
//	node/moves       moves: plans (pure functions) and the Mover that
//	                 starts them (drains, rebalancing) and steps each on
//	                 the partition's leader, with status and metrics
//	node/replica     a partition's replica: leadership, high watermark, acks, Raft
//	  raftlog        the partition's segment log as the Raft log
//	  transport      Raft messages between brokers
//	node/group       consumer groups (classic and KIP-848) over a log interface
//	node/txn         the transaction coordinator over a log interface
//	node/leadership  leaders' claims, gossiped
//	node/admin       the admin HTTP API and metrics
//	node/authz, sasl, admission, datadir, scrub, tlsfiles, topicconfig
//	node/nodetest    helpers that start nodes in tests
//
// Locks. No lock of this package is held across a Raft round, an fsync, a
// network call or a log scan, with the exceptions named below. The order,
// outer first:
//
//	hosted.Set plan lock -> its mu    a reconcile plans under both (reading
//	                                  the catalog, and the Mover's
//	                                  StillVoting state);
//	                                  partitions open, close and go to
//	                                  quarantine after, each claimed; see
//	                                  node/hosted's doc
//	hosted.Partition's append lock    the idempotence check and a batch's
//	                                  place in the log's order (Enqueue); the
//	                                  leader's round is waited for outside it;
//	                                  taken only inside hosted.Partition's
//	                                  methods, never by a handler
//	hosted.TxnIndex scanMu -> mu      one request scans; mu only publishes
//	hosted.TxnIndex flushMu -> mu     checkpoint writes run outside mu
//	the rest                          leaves
//
// Known exceptions, each waited on only by requests that need its result:
// the lazy creation of the group and transaction coordinators (their
// createMu, once per node), the reservation of a block of producer ids
// (producerIDs.mu, one file write per 1,000 ids), the rebuild of a
// partition's producer state when its replica starts leading in a new epoch
// (under the append lock, a header scan of at most the last 100,000
// offsets), a single-copy partition's append (under the append lock, the
// log's own write and, with flush policy every-append, its fsync: the
// log's lock serialises it anyway), and mend's close of stopped replicas
// (under the set's plan lock, hosted.Set.Mend).
package node
