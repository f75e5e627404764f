// Package leadership spreads who leads each partition to every node, so
// that any node answers Metadata with the partition's current leader,
// leader epoch, in-sync and offline replicas, including partitions it does
// not host.
//
// # What is spread
//
// Each node publishes a Claim for every replica it leads, and only those:
// (topic id, partition, leader = itself, leader epoch, ISR, offline
// replicas), as its replica (node/replica: with Raft, the Raft group)
// reports them. Every node merges the claims of its peers into a Table;
// per partition the claim with the highest epoch wins (with Raft a term
// has at most one leader, so two claims at one epoch do not happen; a
// deposed leader's older claim loses to its successor's as soon as both
// are known). A claim whose leader is not among the partition's replicas
// in the catalog is ignored by the node when it reads the table.
//
// # How it travels: a version in a gossip tag, and a pull
//
// A node's claims change as a whole set at once (a failover moves
// thousands of leaderships) and are too big for gossip itself: with
// 10,000 partitions a node may lead thousands, far over the 512 bytes of
// Serf tags or a user event's ~500-byte payload. So gossip carries only a
// version: the "lv" tag, "<incarnation>.<version>" (base 36, at most 27
// bytes), where the incarnation is random per process and the version
// counts the changes of this node's claim set. A peer that sees the tag
// differ from what it holds pulls the claims over the node-to-node HTTP of
// the admin listener (Path, beside the catalog's anti-entropy endpoints),
// asking for the changes since the version it holds; the node answers with
// only the claims changed since then and the partitions it stopped leading
// (a delta), or with its whole set when it cannot (another incarnation, or
// removals forgotten past a bounded window). The Syncer compares tags a few
// times a second, which costs no network, so a missed tag update is caught
// at the next round: that comparison is the anti-entropy. Idle, nothing is
// sent beyond gossip's own traffic.
//
// Serf user events were the alternative: they are coalesced and spread by
// every node, but their payload is too small for more than a handful of
// claims, a burst of changes is re-broadcast by every peer, and a node
// that missed one would still need a pull to repair. The tag costs one
// gossip update per change burst (the publisher coalesces changes, Node
// publishes at most a few times a second) and the pull is one bounded
// request per peer per burst.
//
// # Encoding and bounds
//
// A pull answer is binary (Encode/Decode): claims grouped by topic id,
// integers as varints, so a claim with three in-sync replicas takes about
// eight bytes: a node leading 3,334 partitions (10,000 on three nodes)
// answers a full pull in 26.6 KB, and a change of a few leaderships in a
// delta of a few dozen bytes. Peers are never trusted: Decode bounds every count by the bytes
// left before allocating, refuses more than MaxReplicas per list, negative
// partitions or epochs and trailing bytes, and the Syncer takes an answer
// only from the broker id the member gossips, for that broker's own
// leaderships.
//
// # Staleness
//
// The table is a hint, stale for a moment after a change: a client sent to
// a former leader gets NOT_LEADER_OR_FOLLOWER (with the current leader
// where the version carries it) or FENCED_LEADER_EPOCH and refreshes. The
// claims of a node that left the cluster are dropped at once; those of a
// node gossip says is failed or gone, or whose tag has moved on while
// pulls from it keep failing, after DropAfter (a failure may be a false
// suspicion), so a dead leader is not advertised for long; the node then
// answers from its cluster view, as without a claim.
//
// # The node's leaders: publisher and answer
//
// Leaders is the node's whole leadership: it publishes this node's claims
// from the replicas it hosts (a scan every 5 s, at most every 100 ms when
// told of a change: Changed, or a membership event), records the
// partitions' first leaders through topics.LedMarks, runs the Syncer, and
// answers who leads a partition (Of, and LeaderOf, Current over it) for
// every handler and the admin API: the replica here where it leads, else
// the newer of the replica's view and a live leader's claim, else the
// node's cluster view. Its loops run under the node's one owner of
// background loops (Start takes its Go).
//
// Locks: Local's mu and Table's mu, leaves, held only over memory; none is
// held while publishing the tag, pulling from a peer or writing led marks.
package leadership
