package raftlog

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const noLimit = math.MaxUint64

// recordBatch builds an uncompressed RecordBatch v2 holding one record per
// value, base offset 0 and no epoch, as a producer sends it.
func recordBatch(values ...string) []byte {
	const ts = 1700000000000
	h := recordbatch.NoProducer()
	h.FirstTimestamp, h.MaxTimestamp = ts, ts+int64(len(values))-1
	h.LastOffsetDelta = int32(len(values) - 1)
	recs := make([]recordbatch.Record, len(values))
	for i, v := range values {
		recs[i] = recordbatch.Record{TimestampDelta: int64(i), OffsetDelta: int64(i), Value: []byte(v)}
	}
	b, err := recordbatch.Build(nil, h, recs, nil)
	if err != nil {
		panic(err)
	}
	return b
}

// recordValues decodes the values of an uncompressed batch's records.
func recordValues(t *testing.T, batch []byte) []string {
	t.Helper()
	h, err := recordbatch.ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := recordbatch.ParseRecords(nil, batch[recordbatch.HeaderSize:h.Size()], h.NumRecords, h.LastOffsetDelta)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// stamped is batch with the base offset and epoch an append gives it.
func stamped(batch []byte, offset int64, epoch uint64) []byte {
	b := bytes.Clone(batch)
	binary.BigEndian.PutUint64(b, uint64(offset))
	binary.BigEndian.PutUint32(b[offEpoch:], uint32(epoch))
	return b
}

func entry(index, term uint64, typ pb.EntryType, data []byte) *pb.Entry {
	return &pb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Type: typ.Enum(), Data: data}
}

// testConfig is a Raft log's partition config: small segments so a few
// entries roll, and no retention of the partition's own.
func testConfig() partition.Config {
	cfg := partition.DefaultConfig()
	cfg.SegmentBytes = 1024
	cfg.RetentionAge, cfg.RetentionBytes = -1, -1
	return cfg
}

func openLog(t testing.TB, dir string) *partition.Log {
	t.Helper()
	l, err := partition.Open(dir, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the directory is removed: a roll's background flush
	// still writing would make the removal fail.
	t.Cleanup(func() { l.Close() })
	return l
}

func openStorage(t testing.TB, l *partition.Log, opts Options) *Storage {
	t.Helper()
	s, err := Open(l, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// logBytes is every byte of the log's batches from its start up to upTo.
func logBytes(t *testing.T, l *partition.Log, upTo int64) []byte {
	t.Helper()
	sl, err := l.Read(l.StartOffset(), math.MaxInt, upTo)
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Release()
	var out []byte
	for _, r := range sl.Regions {
		b := make([]byte, r.Length)
		if _, err := r.File.ReadAt(b, r.Position); err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}
