package raftlog

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/spool-log/spool/partition"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

const noLimit = math.MaxUint64

// recordBatch builds an uncompressed RecordBatch v2 holding one record per
// value, base offset 0 and no epoch, as a producer sends it.
func recordBatch(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		body := []byte{0}
		body = binary.AppendVarint(body, int64(i)) // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // no key
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0)
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(recs))
	be := binary.BigEndian
	be.PutUint32(b[offLength:], uint32(batchHeaderSize-offEpoch+len(recs)))
	be.PutUint32(b[offEpoch:], math.MaxUint32)
	b[offMagic] = 2
	be.PutUint32(b[offLastDelta:], uint32(len(values)-1))
	be.PutUint64(b[27:], 1700000000000)
	be.PutUint64(b[35:], 1700000000000+uint64(len(values))-1)
	be.PutUint64(b[43:], math.MaxUint64)
	be.PutUint16(b[51:], math.MaxUint16)
	be.PutUint32(b[53:], math.MaxUint32)
	be.PutUint32(b[57:], uint32(len(values)))
	b = append(b, recs...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// recordValues decodes the values of an uncompressed batch's records.
func recordValues(t *testing.T, batch []byte) []string {
	t.Helper()
	n := int(binary.BigEndian.Uint32(batch[57:]))
	r := batch[batchHeaderSize:]
	var out []string
	for range n {
		l, k := binary.Varint(r)
		rec := r[k : k+int(l)]
		r = r[k+int(l):]
		p := 1
		for range 2 { // timestamp and offset deltas
			_, k := binary.Varint(rec[p:])
			p += k
		}
		kl, k := binary.Varint(rec[p:])
		p += k + max(int(kl), 0)
		vl, k := binary.Varint(rec[p:])
		p += k
		out = append(out, string(rec[p:p+int(vl)]))
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
