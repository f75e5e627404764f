package group

import (
	"fmt"
	"sync"
)

// Log is the storage behind __consumer_offsets, one partition at a time.
// The broker implements it on its partition logs; the coordinator only
// appends whole RecordBatch v2 it built itself and reads them back.
type Log interface {
	// Append appends one RecordBatch v2 (base offset 0; the log assigns
	// offsets) to partition p and returns once the batch is as durable as
	// the node promises acknowledged records to be. A kerr error (such as
	// NOT_LEADER_OR_FOLLOWER) is translated for the client the way Kafka
	// translates append errors for commits.
	Append(p int32, batch []byte) error

	// Replay calls fn with the bytes of every batch in partition p, from
	// the log start to the end, oldest first. Each call holds one or more
	// whole batches. A partition that does not exist yet replays nothing.
	Replay(p int32, fn func(batches []byte) error) error
}

// MemLog is an in-memory Log, for tests and for running a coordinator that
// need not survive its process.
type MemLog struct {
	mu    sync.Mutex
	parts map[int32][][]byte
	fail  error
}

// NewMemLog returns an empty MemLog.
func NewMemLog() *MemLog { return &MemLog{parts: make(map[int32][][]byte)} }

// Append implements Log.
func (l *MemLog) Append(p int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if err := decodeBatches(batch, func(record) error { return nil }); err != nil {
		return fmt.Errorf("append to %s-%d: %w", TopicName, p, err)
	}
	l.parts[p] = append(l.parts[p], append([]byte(nil), batch...))
	return nil
}

// Replay implements Log.
func (l *MemLog) Replay(p int32, fn func([]byte) error) error {
	l.mu.Lock()
	batches := append([][]byte(nil), l.parts[p]...)
	l.mu.Unlock()
	for _, b := range batches {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// Batches returns how many batches partition p holds.
func (l *MemLog) Batches(p int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.parts[p])
}

// SetFailAppends makes every later Append return err (nil: succeed again),
// to test what clients see when the log refuses writes.
func (l *MemLog) SetFailAppends(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail = err
}
