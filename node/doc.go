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
//	node/            handlers, wiring, the partitions this node hosts: their
//	                 open, close and reconcile (partitions.go)
//	node/hosted      what a hosted partition keeps beside its log: producer
//	                 state (idempotent and transactional appends) and the
//	                 transaction index (read_committed)
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
//	reconcileMu -> mu                 reconcile plans under both; partitions
//	                                  open, close and go to quarantine after,
//	                                  each claimed in reconciling
//	localPartition.appendMu           the idempotence check and a batch's
//	                                  place in the log's order (Enqueue); the
//	                                  leader's round is waited for outside it;
//	                                  held around every hosted.Producers call
//	hosted.TxnIndex scanMu -> mu      one request scans; mu only publishes
//	hosted.TxnIndex flushMu -> mu     checkpoint writes run outside mu
//	mendMu, the rest                  leaves
//
// Known exceptions, each waited on only by requests that need its result:
// the lazy creation of the group and transaction coordinators (their
// createMu, once per node), the reservation of a block of producer ids
// (producerIDs.mu, one file write per 1,000 ids), the rebuild of a
// partition's producer state when its replica starts leading in a new epoch
// (under appendMu, a header scan of at most the last 100,000 offsets), a
// single-copy partition's append (under appendMu, the log's own write and,
// with flush policy every-append, its fsync: the log's lock serialises it
// anyway), and mend's close of stopped replicas (under reconcileMu).
package node
