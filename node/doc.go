// Package node is Spool's broker: the Kafka API handlers and the wiring that
// builds a Node from its parts.
//
// Each Kafka API has its own file named after its key (00_produce.go,
// 01_fetch.go, ...), kfake style, opening with its behaviour and version
// notes; apis.go holds the one table of supported versions and the dispatch.
// A handler decodes, checks and answers; what it asks of the node's state it
// asks a part (the sub-packages below) through a Node field. node.go builds
// the Node and starts and stops its parts; parts.go holds the adapters that
// hand each part what it needs of the others. Cluster-wide knowledge (which
// brokers are alive, which replicas a partition has, which topics exist)
// comes from the node's membership agent (package membership, started by
// node/cluster): a node alone is a cluster of one, on the same code path.
// Handlers, the coordinators' logs and the background loops reach a
// partition's log only through its replica (node/replica). Who leads a
// partition has one answer, n.leaders.Of (node/leadership's answer.go, with
// LeaderOf and Current over it): the replica's word where this node leads
// it, else the newest of the replica's view and the leader's claim, else
// the cluster view. Every background goroutine starts under one owner
// (node/background's Group, n.loops) and ends, waited for, before the parts
// it uses stop (stopParts, shared by Shutdown and a failed Start).
//
// The house (see DESIGN.md):
//
//	node/            the Kafka API handlers, the Node's wiring (node.go,
//	                 config.go, apis.go) and the parts' adapters (parts.go)
//	node/hosted      the partitions this node hosts: Host over the catalog
//	                 (how one opens, the drop verdicts, the orphans' sweep,
//	                 create/delete/alter applied here, the upkeep) on
//	                 hosted.Set (reconcile, mend, repair, close, the shutdown
//	                 checkpoint), and each Partition with its replica,
//	                 settings, producer state (idempotent and transactional
//	                 appends under its append lock) and transaction index
//	node/topics      the catalog adapter: Spec, one TopicID, IsInternal,
//	                 alterations and reassignments with typed refusals, the
//	                 partitions' first-leader marks (led.go)
//	node/cluster     the membership agent's config, start and stop, and View
//	                 (live brokers, placement, the cluster view's leader)
//	node/moves       moves: plans (pure functions) and the Mover that
//	                 starts them (drains, rebalancing) and steps each on
//	                 the partition's leader, with status and metrics
//	node/replica     a partition's replica: leadership, high watermark, acks, Raft
//	  raftlog        the partition's segment log as the Raft log
//	  transport      Raft messages between brokers
//	node/replication the Raft driver and transport (port kept across
//	                 restarts), snapshot copies under the copy throttle, the
//	                 repair's caught-up question, replication metrics and
//	                 /readyz's catch-up gate, the odd-factor policy
//	node/leadership  leaders' claims, gossiped, and the one answer to who
//	                 leads a partition (Leaders.Of)
//	node/coord       the coordinators hosted here: consumer groups,
//	                 transactions, share state; one Host each (internal topic
//	                 made on first use, coordinator made once, led partitions
//	                 loaded per epoch), markers and verifications
//	node/group       consumer groups (classic and KIP-848) over a log interface
//	node/txn         the transaction coordinator over a log interface, and
//	                 the node's producer ids
//	node/share       share groups (KIP-932) and their wiring (share.Node:
//	                 the persister over the state stores, group configs)
//	node/tier        tiered storage: uploads, manifests, remote reads, the
//	                 restore; Service is the node's side (n.tier, nil: off)
//	node/access      who a connection is and may do: Kafka listeners and
//	                 connection state, the SASL gate, the authorizer's
//	                 requester, client quotas on the request path, TLS, admin
//	                 token and SASL material with its reload (the Guard)
//	node/authz       ACL semantics, the view over the catalog's ACLs
//	node/sasl        mechanisms, credentials, the node's users over the cluster's
//	node/quota       rates, precedence and the KIP-546 entity codec
//	node/compaction  the log cleaner (one loop, run by n.loops)
//	node/background  the owner of every background goroutine (Group)
//	node/peers       the inter-broker client of the admin listeners
//	node/admin       the admin HTTP API and metrics; View (the node as the
//	                 API sees it); admin/console, the web console
//	node/admission, datadir, scrub, tlsfiles, topicconfig
//	node/nodetest    helpers that start nodes in tests
//
// Locks. No lock of this package is held across a Raft round, an fsync, a
// network call or a log scan, with the exceptions named below; node itself
// holds none but the started/ready flags. The parts' locks, outer first:
//
//	hosted.Set plan lock -> its mu    a reconcile plans under both (reading
//	                                  the catalog, and the Mover's
//	                                  StillVoting state);
//	                                  partitions open (16 at a time), close
//	                                  and go to quarantine after, each
//	                                  claimed; see node/hosted's doc
//	hosted.Partition's append lock    the idempotence check and a batch's
//	                                  place in the log's order (Enqueue); the
//	                                  leader's round is waited for outside it;
//	                                  taken only inside hosted.Partition's
//	                                  methods, never by a handler
//	hosted.TxnIndex scanMu -> mu      one request scans; mu only publishes
//	hosted.TxnIndex flushMu -> mu     checkpoint writes run outside mu
//	the rest                          leaves: node/access's views are
//	                                  immutable builds behind atomic
//	                                  pointers; tlsfiles.Source.mu,
//	                                  quota.Manager.mu, sasl.Session.mu,
//	                                  the replication tracker's mu,
//	                                  CopyThrottle's mu (its wait outside),
//	                                  leadership's tables, background's
//	                                  Group.mu, tier's Manifest, Uploader
//	                                  and Service mu (none across a store
//	                                  call)
//
// Known exceptions, each waited on only by requests that need its result:
// the lazy creation of each coordinator (node/coord's Host.createMu, once
// per node), a coordinator partition's replay (node/coord's per-partition
// load lock: only that partition's requests wait), the reservation of a
// block of producer ids (txn.ProducerIDs.mu, one file write per 1,000 ids),
// the rebuild of a partition's producer state when its replica starts
// leading in a new epoch (under the append lock, a header scan of at most
// the last 100,000 offsets), a single-copy partition's append (under the
// append lock, the log's own write and, with flush policy every-append, its
// fsync: the log's lock serialises it anyway), mend's close of stopped
// replicas (under the set's plan lock, hosted.Set.Mend), and the share
// state writer's capacity-1 token held across its store write (node/share;
// the state lock is not, so fetches go on).
package node
