package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records in __consumer_offsets use Kafka's own key and value schemas, so
// the topic reads the same as Kafka's:
//
//	offset commit    key v1 (group, topic, partition)  value v3 (offset, leader epoch, metadata, commit time)
//	group metadata   key v2 (group)                    value v3 (protocol type, generation, protocol, leader, members)
//
// A record with a nil value (a tombstone) deletes its key. Batches are plain
// RecordBatch v2, uncompressed, with no producer id.
const (
	offsetCommitKeyVersion   = 1
	offsetCommitValueVersion = 3
	groupMetadataKeyVersion  = 2
	groupMetadataValueVer    = 3
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// record is one key/value pair bound for __consumer_offsets; a nil value is
// a tombstone.
type record struct {
	key, value []byte
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitValue(c commit) []byte {
	v := kmsg.OffsetCommitValue{
		Version:         offsetCommitValueVersion,
		Offset:          c.offset,
		LeaderEpoch:     c.leaderEpoch,
		Metadata:        c.metadata,
		CommitTimestamp: c.timestamp,
	}
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// encodeBatch builds one uncompressed RecordBatch v2 holding recs, with base
// offset 0 (the log assigns the real one) and a correct CRC-32C.
func encodeBatch(recs []record, timestampMillis int64) []byte {
	var body []byte
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		rec = appendVarintBytes(rec, r.key)      // key
		rec = appendVarintBytes(rec, r.value)    // value, -1 for a tombstone
		rec = binary.AppendVarint(rec, 0)        // no headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	b := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp:  timestampMillis,
		MaxTimestamp:    timestampMillis,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(recs)),
		Records:         body,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32c))
	return raw
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

const batchHeaderLen = 61

var errShortBatch = errors.New("truncated record batch")

// decodeBatches walks one or more whole RecordBatch v2 in buf and calls fn
// for every record of every data batch. Control batches are skipped;
// compressed batches are refused, since the coordinator never writes them.
func decodeBatches(buf []byte, fn func(r record) error) error {
	for len(buf) > 0 {
		if len(buf) < batchHeaderLen {
			return errShortBatch
		}
		length := int32(binary.BigEndian.Uint32(buf[8:12]))
		if length < batchHeaderLen-12 || int(length) > len(buf)-12 {
			return fmt.Errorf("record batch length %d: %w", length, errShortBatch)
		}
		batch := buf[:12+int(length)]
		buf = buf[12+int(length):]
		if magic := batch[16]; magic != 2 {
			return fmt.Errorf("record batch magic %d, want 2", magic)
		}
		if want, got := binary.BigEndian.Uint32(batch[17:21]), crc32.Checksum(batch[21:], crc32c); want != got {
			return fmt.Errorf("record batch crc %08x, computed %08x", want, got)
		}
		attrs := binary.BigEndian.Uint16(batch[21:23])
		if attrs&0x20 != 0 { // control batch (transaction marker)
			continue
		}
		if codec := attrs & 0x7; codec != 0 {
			return fmt.Errorf("record batch compressed with codec %d, which the coordinator never writes", codec)
		}
		count := int32(binary.BigEndian.Uint32(batch[57:61]))
		recs := batch[batchHeaderLen:]
		for i := int32(0); i < count; i++ {
			r, rest, err := decodeRecord(recs)
			if err != nil {
				return fmt.Errorf("record %d of batch: %w", i, err)
			}
			recs = rest
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeRecord(b []byte) (record, []byte, error) {
	n, w := binary.Varint(b)
	if w <= 0 || n < 0 || n > int64(len(b)-w) {
		return record{}, nil, errShortBatch
	}
	rec, rest := b[w:w+int(n)], b[w+int(n):]
	if len(rec) < 1 {
		return record{}, nil, errShortBatch
	}
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		_, w := binary.Varint(rec)
		if w <= 0 {
			return record{}, nil, errShortBatch
		}
		rec = rec[w:]
	}
	var r record
	var err error
	if r.key, rec, err = readVarintBytes(rec); err != nil {
		return record{}, nil, err
	}
	if r.value, _, err = readVarintBytes(rec); err != nil {
		return record{}, nil, err
	}
	return r, rest, nil
}

func readVarintBytes(b []byte) ([]byte, []byte, error) {
	n, w := binary.Varint(b)
	if w <= 0 || n < -1 || n > int64(len(b)-w) {
		return nil, nil, errShortBatch
	}
	b = b[w:]
	if n == -1 {
		return nil, b, nil
	}
	return b[:n:n], b[n:], nil
}
