package share

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
)

// StateTopic is the internal topic share partitions' snapshots are kept
// in: Spool's equivalent of Kafka's __share_group_state (same name, own
// record format), compacted, one record per share partition, keyed by
// group, topic id and partition.
const StateTopic = "__share_group_state"

// StoreLog is the storage behind StateTopic, one partition at a time (the
// broker's partition logs, as node/group's Log).
type StoreLog interface {
	// Append appends one RecordBatch v2 to partition p and returns once it
	// is committed (acks=all, fsynced).
	Append(p int32, batch []byte) error
	// Replay calls fn with whole batches of partition p, oldest first.
	Replay(p int32, fn func(batches []byte) error) error
}

// ErrFenced refuses a claim or write from a leader epoch older than one
// the store has seen for that share partition: a deposed leader's.
var ErrFenced = errors.New("share partition state written by a newer leader")

// ErrNotLoaded: the store does not hold the partition (this node does not
// lead it, or has not loaded it).
var ErrNotLoaded = errors.New("share state partition not loaded here")

// Store is the share-state store on the leaders of StateTopic's
// partitions: each loaded partition's latest snapshot per share
// partition, in memory, replayed from the log when loaded.
//
// Lock: Store.mu, never held across an append or a replay.
type Store struct {
	log        StoreLog
	partitions int32

	mu    sync.Mutex
	parts map[int32]*storePart
}

type storePart struct {
	epoch   int32 // the state partition's leader epoch it was loaded in
	entries map[string]*storedState
}

type storedState struct {
	epoch int32 // newest share-partition leader epoch claimed or written
	raw   []byte
}

// NewStore builds a store over log, whose topic has partitions
// partitions.
func NewStore(log StoreLog, partitions int32) *Store {
	return &Store{log: log, partitions: partitions, parts: map[int32]*storePart{}}
}

// Partition is the StateTopic partition k's snapshots go to.
func (s *Store) Partition(k Key) int32 {
	h := fnv.New32a()
	_, _ = h.Write(stateKey(k))
	return int32(h.Sum32() % uint32(s.partitions))
}

// Partitions is StateTopic's partition count.
func (s *Store) Partitions() int32 { return s.partitions }

// stateKey is k as the record key: version 0, group length and bytes,
// topic id, partition.
func stateKey(k Key) []byte {
	b := make([]byte, 0, 1+2+len(k.Group)+16+4)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// Loaded tells whether p is loaded in epoch.
func (s *Store) Loaded(p, epoch int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.parts[p]
	return sp != nil && sp.epoch == epoch
}

// Load replays p for a leadership in epoch, replacing what was loaded.
func (s *Store) Load(p, epoch int32) error {
	entries := map[string]*storedState{}
	var recs []recordbatch.Record
	err := s.log.Replay(p, func(buf []byte) error {
		return recordbatch.Walk(buf, func(batch []byte, h recordbatch.Header) error {
			if h.Control() || h.Compression() != recordbatch.CompressionNone {
				return nil // never written by the store
			}
			var err error
			if recs, err = recordbatch.ParseRecords(recs[:0], batch[recordbatch.HeaderSize:], h.NumRecords, h.LastOffsetDelta); err != nil {
				return fmt.Errorf("%s-%d batch at offset %d: %w", StateTopic, p, h.BaseOffset, err)
			}
			for _, r := range recs {
				if r.Value == nil {
					delete(entries, string(r.Key))
					continue
				}
				snap, err := DecodeSnapshot(r.Value)
				if err != nil {
					continue // not ours to fail the load for; a later write replaces it
				}
				// A deposed leader's append that landed after its
				// successor's is not the state.
				if cur := entries[string(r.Key)]; cur != nil && cur.epoch > snap.Epoch {
					continue
				}
				entries[string(r.Key)] = &storedState{epoch: snap.Epoch, raw: append([]byte(nil), r.Value...)}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("load %s-%d: %w", StateTopic, p, err)
	}
	s.mu.Lock()
	s.parts[p] = &storePart{epoch: epoch, entries: entries}
	s.mu.Unlock()
	return nil
}

// Unload drops p (this node no longer leads it).
func (s *Store) Unload(p int32) {
	s.mu.Lock()
	delete(s.parts, p)
	s.mu.Unlock()
}

// Claim implements Persister's Claim on a loaded partition.
func (s *Store) Claim(k Key, epoch int32) (Snapshot, bool, error) {
	p := s.Partition(k)
	key := string(stateKey(k))
	s.mu.Lock()
	defer s.mu.Unlock()
	part := s.parts[p]
	if part == nil {
		return Snapshot{}, false, ErrNotLoaded
	}
	cur := part.entries[key]
	if cur == nil {
		part.entries[key] = &storedState{epoch: epoch}
		return Snapshot{}, false, nil
	}
	if cur.epoch > epoch {
		return Snapshot{}, false, fmt.Errorf("%w: epoch %d claimed, %d seen", ErrFenced, epoch, cur.epoch)
	}
	cur.epoch = epoch
	if cur.raw == nil {
		return Snapshot{}, false, nil
	}
	snap, err := DecodeSnapshot(cur.raw)
	if err != nil {
		return Snapshot{}, false, err
	}
	return snap, true, nil
}

// Read implements Persister's Read on a loaded partition.
func (s *Store) Read(k Key) (Snapshot, bool, error) {
	p := s.Partition(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	part := s.parts[p]
	if part == nil {
		return Snapshot{}, false, ErrNotLoaded
	}
	cur := part.entries[string(stateKey(k))]
	if cur == nil || cur.raw == nil {
		return Snapshot{}, false, nil
	}
	snap, err := DecodeSnapshot(cur.raw)
	return snap, err == nil, err
}

// Write implements Persister's Write on a loaded partition.
func (s *Store) Write(k Key, snap Snapshot) error {
	p := s.Partition(k)
	key := stateKey(k)
	check := func() (*storePart, error) {
		part := s.parts[p]
		if part == nil {
			return nil, ErrNotLoaded
		}
		if cur := part.entries[string(key)]; cur != nil && cur.epoch > snap.Epoch {
			return nil, fmt.Errorf("%w: epoch %d written, %d seen", ErrFenced, snap.Epoch, cur.epoch)
		}
		return part, nil
	}
	s.mu.Lock()
	_, err := check()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	raw := snap.Encode()
	if err := s.log.Append(p, encodeStateBatch(key, raw)); err != nil {
		return fmt.Errorf("append to %s-%d: %w", StateTopic, p, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	part, err := check()
	if err != nil {
		return err
	}
	part.entries[string(key)] = &storedState{epoch: snap.Epoch, raw: raw}
	return nil
}

// Forget writes a tombstone for k (its group deleted).
func (s *Store) Forget(k Key) error {
	p := s.Partition(k)
	key := stateKey(k)
	if err := s.log.Append(p, encodeStateBatch(key, nil)); err != nil {
		return fmt.Errorf("append to %s-%d: %w", StateTopic, p, err)
	}
	s.mu.Lock()
	if part := s.parts[p]; part != nil {
		delete(part.entries, string(key))
	}
	s.mu.Unlock()
	return nil
}

func encodeStateBatch(key, value []byte) []byte {
	ts := time.Now().UnixMilli()
	h := recordbatch.NoProducer()
	h.PartitionLeaderEpoch = 0
	h.FirstTimestamp, h.MaxTimestamp = ts, ts
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: key, Value: value}}, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}
