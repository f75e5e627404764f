package tier

import (
	"bytes"
	"cmp"
	"container/list"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// AbortedTxn is one aborted transaction that may hold records of an
// uploaded segment: its producer, its first offset and its abort marker's
// offset (Kafka's .txnindex entry without the LSO).
type AbortedTxn struct {
	ProducerID, FirstOffset, MarkerOffset int64
}

// A segment's txnindex object is what a read_committed fetch below the
// local log start needs beside the records: every aborted transaction with
// a record in the segment's range, wherever its marker is. The leader
// uploads a segment only once its last stable offset has passed the
// segment's end, so every transaction with a record in it has ended and the
// list is complete (Kafka uploads below the LSO alike). Layout, big-endian:
// "SPTX", a version byte (1), then 24 bytes an entry (producer id, first
// offset, marker offset), by marker offset. Empty lists upload no object.
//
// Segments uploaded before this layout carry the partition's
// transaction-index checkpoint instead (JSON, node/hosted's txn-index as
// of that upload, possibly stale): its aborted list is read as a best
// effort.
const (
	txnIndexMagic   = "SPTX"
	txnIndexVersion = 1
	txnEntrySize    = 3 * 8
	// maxTxnIndexBytes bounds an object a reader decodes (about 700,000
	// aborted transactions in one segment).
	maxTxnIndexBytes = 16 << 20
)

// EncodeTxnIndex is the txnindex object of a segment's aborted
// transactions; nil for none.
func EncodeTxnIndex(txns []AbortedTxn) []byte {
	if len(txns) == 0 {
		return nil
	}
	b := make([]byte, 0, len(txnIndexMagic)+1+len(txns)*txnEntrySize)
	b = append(b, txnIndexMagic...)
	b = append(b, txnIndexVersion)
	for _, t := range txns {
		b = binary.BigEndian.AppendUint64(b, uint64(t.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(t.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(t.MarkerOffset))
	}
	return b
}

// DecodeTxnIndex decodes a txnindex object (either layout); anything
// malformed is an error, never a panic (the bytes come from the store).
func DecodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	if len(b) > maxTxnIndexBytes {
		return nil, fmt.Errorf("txnindex of %d bytes, more than %d", len(b), maxTxnIndexBytes)
	}
	if len(b) == 0 {
		return nil, nil
	}
	if !bytes.HasPrefix(b, []byte(txnIndexMagic)) {
		return decodeLegacyTxnIndex(b)
	}
	b = b[len(txnIndexMagic):]
	if len(b) < 1 || b[0] != txnIndexVersion {
		return nil, fmt.Errorf("txnindex version %v not known", b[:min(len(b), 1)])
	}
	b = b[1:]
	if len(b)%txnEntrySize != 0 {
		return nil, fmt.Errorf("txnindex of %d entry bytes, not a multiple of %d", len(b), txnEntrySize)
	}
	out := make([]AbortedTxn, 0, len(b)/txnEntrySize)
	for ; len(b) > 0; b = b[txnEntrySize:] {
		t := AbortedTxn{
			ProducerID:   int64(binary.BigEndian.Uint64(b)),
			FirstOffset:  int64(binary.BigEndian.Uint64(b[8:])),
			MarkerOffset: int64(binary.BigEndian.Uint64(b[16:])),
		}
		if t.FirstOffset < 0 || t.MarkerOffset < t.FirstOffset {
			return nil, fmt.Errorf("txnindex entry %+v: offsets out of order", t)
		}
		if n := len(out); n > 0 && out[n-1].MarkerOffset > t.MarkerOffset {
			return nil, fmt.Errorf("txnindex not by marker offset at %+v", t)
		}
		out = append(out, t)
	}
	return out, nil
}

// decodeLegacyTxnIndex reads the aborted list of a node/hosted txn-index
// checkpoint uploaded as a segment's txnindex before the layout above.
func decodeLegacyTxnIndex(b []byte) ([]AbortedTxn, error) {
	var c struct {
		Version int        `json:"version"`
		Aborted [][3]int64 `json:"aborted"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Version != 1 {
		return nil, fmt.Errorf("txnindex is neither %s nor a version 1 checkpoint", txnIndexMagic)
	}
	out := make([]AbortedTxn, 0, len(c.Aborted))
	for _, a := range c.Aborted {
		if a[1] < 0 || a[2] < a[1] {
			return nil, fmt.Errorf("txnindex checkpoint entry %v: offsets out of order", a)
		}
		out = append(out, AbortedTxn{ProducerID: a[0], FirstOffset: a[1], MarkerOffset: a[2]})
	}
	slices.SortFunc(out, func(x, y AbortedTxn) int { return cmp.Compare(x.MarkerOffset, y.MarkerOffset) })
	return out, nil
}

// AbortedIn is the part of txns (by marker offset) that may hold records
// in [from, to): marker at or after from, first offset below to, as
// Kafka's collectAbortedTxns.
func AbortedIn(txns []AbortedTxn, from, to int64) []AbortedTxn {
	i, _ := slices.BinarySearchFunc(txns, from, func(t AbortedTxn, off int64) int {
		return cmp.Compare(t.MarkerOffset, off)
	})
	var out []AbortedTxn
	for _, t := range txns[i:] {
		if t.FirstOffset < to {
			out = append(out, t)
		}
	}
	return out
}

// txnLists keeps the decoded txnindex objects of recently read segments in
// memory, bounded by their entries; the bytes come through the chunk
// cache, which shares one download among concurrent readers. mu is held
// only to look up or insert, never across a read of the store.
type txnLists struct {
	mu      sync.Mutex
	max     int // entries kept in all
	entries int
	byID    map[SegmentID]*list.Element
	lru     list.List // of *txnList, most recent first
}

type txnList struct {
	id   SegmentID
	txns []AbortedTxn
}

// maxCachedTxnEntries bounds the entries txnLists keeps (24 bytes each).
const maxCachedTxnEntries = 1 << 20

func (c *txnLists) get(id SegmentID) ([]AbortedTxn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*txnList).txns, true
}

func (c *txnLists) put(id SegmentID, txns []AbortedTxn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = make(map[SegmentID]*list.Element)
		if c.max == 0 {
			c.max = maxCachedTxnEntries
		}
	}
	if _, ok := c.byID[id]; ok || len(txns) > c.max {
		return
	}
	c.byID[id] = c.lru.PushFront(&txnList{id: id, txns: txns})
	c.entries += len(txns)
	for c.entries > c.max {
		e := c.lru.Back()
		l := e.Value.(*txnList)
		c.lru.Remove(e)
		delete(c.byID, l.id)
		c.entries -= len(l.txns)
	}
}

// Aborted lists the aborted transactions that may hold records of remote
// segment s in [from, to) (AbortedIn over its txnindex object, read
// through the chunk cache once and then kept decoded).
func (r *Reader) Aborted(ctx context.Context, topic string, index int32, s RemoteSegment, from, to int64) ([]AbortedTxn, error) {
	size := s.FileSizes[fileTxnIndex]
	if size == 0 {
		return nil, nil // no aborted transaction in the segment
	}
	if size > maxTxnIndexBytes {
		return nil, fmt.Errorf("remote segment %d of %s-%d: txnindex of %d bytes, more than %d", s.Base, topic, index, size, maxTxnIndexBytes)
	}
	txns, ok := r.txns.get(s.ID)
	if !ok {
		prefix, err := r.layout.PartitionPrefix(topic, index)
		if err != nil {
			return nil, err
		}
		b := make([]byte, size)
		if err := r.cache.readAt(ctx, prefix+SegmentDir(s.Base, s.Next, s.ID)+FileKinds[fileTxnIndex], size, b, 0); err != nil {
			return nil, err
		}
		if txns, err = DecodeTxnIndex(b); err != nil {
			return nil, fmt.Errorf("remote segment %d of %s-%d: %w", s.Base, topic, index, err)
		}
		r.txns.put(s.ID, txns)
	}
	return AbortedIn(txns, from, to), nil
}
