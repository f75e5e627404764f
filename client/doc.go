// Package client is the operations behind the spool command line, usable
// from Go: outage-tolerant produce (a per-partition report of what was and
// was not written) and consume (partitions whose leader is down are named,
// the others read), the position vocabulary of --from and --to and its
// resolution to offsets, topic and group administration over kadm, group
// listing across brokers naming those that did not answer, and the client
// of a node's admin HTTP API with its JSON types (members and their watch,
// placement, quarantine, scrub, decommission).
//
// Each operation takes a Config (where the cluster is, how long to wait)
// and an options struct, and returns a result struct; results that the CLI
// prints as tables have a WriteTable method, and all encode to the JSON the
// CLI prints with -o json. Errors are one line an operator can act on.
package client
