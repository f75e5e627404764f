// Package tier is tiered storage: closed segments of a topic with
// remote.storage.enable copied to an S3-compatible object store, so that
// retention (retention.ms/bytes, the total) may reach beyond the local
// disks, which keep only local.retention.ms/bytes.
//
// It owns:
//   - the store (store.go: the ObjectStore interface it needs; s3.go: an
//     S3 client over minio-go, configured by StoreConfig, credentials from a
//     file or the environment, never a flag value, never logged);
//   - the object layout (layout.go; documented in DESIGN.md's on-disk
//     section);
//   - the records of what is remote (record.go): each upload is a record
//     the leader makes part of the partition's replicated state (a Raft
//     command entry through replica.RecordRemote), which every replica
//     applies in log order to its manifest (manifest.go), durably, before
//     its local retention may drop the segments it covers;
//   - the uploader (uploader.go): the leader of each tiered partition copies
//     each closed, committed segment above its manifest's end, once the
//     last stable offset has passed it, with what a reader needs beside it
//     (offset and time indexes, leader-epoch checkpoint, the producer
//     snapshot as of its end, built on the one before, and its aborted
//     transactions: txnindex.go), then records it; a failed copy is
//     retried with backoff and counted in the backlog; every replica keeps
//     the last producer snapshot beside its partition;
//   - the node's side (service.go: Service, one per node, nil when no
//     store is configured; hosted.go: the manifests of the partitions the
//     node hosts, by directory; view.go: View, a partition's remote side
//     as the Fetch and ListOffsets handlers ask it below the local log
//     start); package node holds only the field, its construction and the
//     loops, and passes its open partitions as Hosted;
//   - the restore (restore.go): a topic created with
//     remote.storage.recovery=true (`spool topic restore`) has each replica
//     that starts a partition's group afresh take the store's manifest
//     copy and start its empty log at the copy's end.
//
// A segment is uploaded under a fresh object directory (a random id), so a
// copy cut by a crash never overwrites one a record points to; the record
// decides. Of two records for the same range (an old leader's and a new
// leader's), every replica keeps the first it applies (the log order), and
// the other's objects are orphans to be removed once no record refers to
// them.
//
// # Locks
//
// Manifest.mu guards a partition's manifest; it is held while a record is
// applied (the manifest file written and fsynced: the apply is the
// replica's Raft round, which holds the group's lock for its disk writes
// anyway) and for reads of the in-memory copy, never across a network call.
// Uploader.mu guards the backlog figures only; Service.mu the map of
// manifests only (never held while one is opened, read or applied). Order:
// each alone (Manifest.mu, Uploader.mu, Service.mu: none is taken under
// another). The store is only ever called with none of them held.
package tier
