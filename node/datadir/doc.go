// Package datadir owns what a node keeps in its data directory beside the
// partitions: the lock that allows one process per directory (lock.go) and
// the quarantine, where whatever the node drops is set aside rather than
// deleted (quarantine.go).
package datadir
