// Package transport carries Raft messages between Spool nodes for the
// per-partition Raft groups (go.etcd.io/raft/v3 raftpb.Message).
//
// It owns the node-to-node replication connections and nothing above them:
// it does not know what a partition holds, who leads it, or how a group is
// driven. The node gives it a group key (topic id + partition) with each
// message and gets each received message back through a Handler.
//
// What it owns:
//
//   - Addressing. A message goes to the node m.To, from this node (m.From
//     must be this node's id). The peer's address comes from a Resolver, fed
//     by the gossip view (the "raft" tag); this node listens on its own
//     address (Config.ListenAddr).
//   - Batching. Every message for one destination node is appended, already
//     encoded, to that node's send queue; one writer per connection (1 or 2
//     long-lived TCP connections per peer, chosen by group so a group's
//     messages stay in order) writes the queue as frames of many messages in
//     one write: when the driver calls Flush after a round of Readys, when
//     FlushBytes are waiting, or at the latest FlushInterval after the first
//     message was queued. The heartbeats that one tick of many groups
//     produce for a peer therefore leave in one write of a few frames, not
//     one write each. No goroutine exists per group.
//   - Bounds. A frame's length, its message count, each message's size (at
//     least raft's MaxSizePerMsg plus one entry; a MsgSnap carries Spool's
//     snapshot metadata, "log start moved", and is bounded like any message:
//     segment data is streamed elsewhere) and the entries per message are
//     bounded on both sides; the per-peer send queue is bounded in bytes and
//     messages, and Send never blocks: a message that does not fit is dropped
//     and counted (raft retransmits).
//   - Distrust. A peer is never trusted: a handshake names the sender's node
//     id and cluster id and a peer from another cluster is refused; with
//     Config.Auth (auth.go) both ends also prove, by challenge-response, a
//     key of the cluster's gossip keyring, any key of it, so a rotation
//     keeps replication going. The handshake is bounded in bytes and in
//     time (HandshakeTimeout), and one remote IP may hold at most
//     MaxPendingPerHost connections in it, so a stranger that connects and
//     sends nothing cannot crowd peers out. Every refusal is logged with
//     the remote address and a reason (at most 20 per 10 s, the rest
//     summed up) and counted by that reason; frames
//     are length-checked before any allocation; a malformed frame, a message
//     not from the handshaken node or not to this one, or a raft-local
//     message type closes the connection with a logged reason, never a panic.
//     Reads have a deadline; idle senders keep their connection alive with
//     empty frames.
//   - Optional mutual TLS (Config.TLS, tls.go): TLS 1.2+ with a verified
//     certificate on both sides before the handshake below; an accepted
//     peer that fails it is refused and counted (reason "tls"). Without it
//     connections are plain TCP.
//   - Failure. A dead peer is redialled with exponential backoff. Messages
//     for a peer that cannot be reached are dropped, counted, and reported
//     through Config.Unreachable (raft's ReportUnreachable), and a MsgSnap's
//     fate through Config.SnapshotStatus, always from the transport's own
//     goroutines, never from inside Send.
//   - Metrics through github.com/hashicorp/go-metrics under
//     "replication.transport.*": bytes and messages sent and received,
//     frames, drops by reason, reconnects, refused inbound connections by
//     reason (tls, handshake, timeout, no_key, unexpected_key, bad_key,
//     wrong_cluster, wrong_node, not_ready, too_many_conns,
//     too_many_pending), and dialled peers this node refused
//     (dial_refused, reason bad_key: the peer did not prove a key).
//
// Locks: Transport.mu (links, inbound, pending, closed), then a link's mu;
// neither is held across a network call. refusalLog.mu is a leaf, taken
// alone.
//
// Wire format (big-endian). Handshake, dialler first, version 1 (no key):
//
//	"SPRT" 1 from:u64 to:u64 cidLen:u8 clusterID
//
// answered by
//
//	"SPRT" 1 status:u8 node:u64 cidLen:u8 clusterID
//
// Version 2 (Config.Auth; the MACs are described in auth.go):
//
//	dialler:  "SPRT" 2 from:u64 to:u64 cidLen:u8 clusterID nonce:[32]
//	listener: "SPRT" 2 status:u8 node:u64 cidLen:u8 clusterID nonce:[32] mac:[32]
//	dialler:  mac:[32]
//	listener: status:u8
//
// A listener answers a hello of a version it does not take in version 1,
// with the status saying which side lacks the key.
//
// then only the dialler writes, frames of
//
//	length:u32 (of what follows) kind:u8 (1) count:u16
//	count × ( topic:[16]byte partition:u32 msgLen:u32 raftpb.Message )
//
// A frame with count 0 is a keepalive.
package transport
