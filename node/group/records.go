package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
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

// record is one key/value pair bound for __consumer_offsets; a nil value is
// a tombstone.
type record struct {
	key, value []byte
	// seq is a transactional record's place in the log (shard.nextSeq),
	// stamped when it is appended or replayed; 0 for others.
	seq uint64
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
// offset 0 and leader epoch 0 (the log stamps the real ones).
func encodeBatch(recs []record, timestampMillis int64) []byte {
	h := recordbatch.NoProducer()
	h.PartitionLeaderEpoch = 0
	h.LastOffsetDelta = int32(len(recs) - 1)
	h.FirstTimestamp, h.MaxTimestamp = timestampMillis, timestampMillis
	rs := make([]recordbatch.Record, len(recs))
	for i, r := range recs {
		rs[i] = recordbatch.Record{OffsetDelta: int64(i), Key: r.key, Value: r.value}
	}
	b, err := recordbatch.Build(nil, h, rs, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// decodeBatches walks one or more whole RecordBatch v2 in buf and calls fn
// for every record of every data batch. Control batches are skipped;
// compressed batches are refused, since the coordinator never writes them.
func decodeBatches(buf []byte, fn func(r record) error) error {
	var recs []recordbatch.Record
	return recordbatch.Walk(buf, func(batch []byte, h recordbatch.Header) error {
		if h.Control() { // transaction marker
			return nil
		}
		if codec := h.Compression(); codec != recordbatch.CompressionNone {
			return fmt.Errorf("record batch compressed with codec %d, which the coordinator never writes", codec)
		}
		var err error
		if recs, err = recordbatch.ParseRecords(recs[:0], batch[recordbatch.HeaderSize:], h.NumRecords, h.LastOffsetDelta); err != nil {
			return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		for _, r := range recs {
			if err := fn(record{key: r.Key, value: r.Value}); err != nil {
				return err
			}
		}
		return nil
	})
}
