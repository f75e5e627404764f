// Package replication is the node's replication wiring: the one
// replica.Driver that drives every replicated partition's Raft group, and
// the one transport (node/replica/transport) that carries their messages
// to the peers' advertised "raft" addresses, both living from Start to
// Stop; the Raft port kept across restarts (port.go); the snapshot copies
// served and fetched over the admin listener under the copy throttle
// (snapshots.go, throttle.go); the leader's answer to a damaged replica
// asking whether the rest of its group holds everything committed
// (repair.go); the replication metrics and /readyz's catch-up gate
// (metrics.go, readiness.go); and the odd replication factors policy
// (factor.go).
//
// It never imports package node: what it needs of the node (the
// partitions open here, the membership agent once it exists, leaders'
// claims, the peers' admin client) it is handed through Config.
//
// Locks, all leaves: the tracker's mu (metrics.go) is held while the
// replicas open here are sampled (each replica's own state, in memory)
// and never across I/O; the copy throttle's mu only schedules, the wait is
// outside it.
package replication
