package recordbatch_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
)

// TestBuildReadsBack: what Build writes, in every codec, validates, reads
// back record for record, and is what an independent encoder (franz-go's
// kmsg) reads as the same batch.
func TestBuildReadsBack(t *testing.T) {
	hdrs := recordbatch.AppendHeaders(nil, []recordbatch.RecordHeader{{Key: []byte("h"), Value: []byte("x")}, {Key: []byte{}, Value: nil}})
	recs := []recordbatch.Record{
		{Key: []byte("k"), Value: []byte("v"), Headers: hdrs},
		{TimestampDelta: 5, OffsetDelta: 1, Key: []byte("k2")},
		{OffsetDelta: 2, Key: []byte{}, Value: bytes.Repeat([]byte("spool"), 20_000)},
	}
	for codec := recordbatch.CompressionNone; codec <= recordbatch.CompressionZstd; codec++ {
		h := recordbatch.NoProducer()
		h.BaseOffset, h.Attributes, h.LastOffsetDelta, h.FirstTimestamp, h.MaxTimestamp = 7, int16(codec), 2, 1000, 1005
		b, err := recordbatch.Build(nil, h, recs, compression.Codecs{})
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if err := recordbatch.Validate(b); err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		got, err := recordbatch.ParseHeader(b)
		if err != nil || got.Size() != int64(len(b)) || got.NumRecords != 3 || got.LastOffset() != 9 || got.CRC != recordbatch.CRC(b) || got.Compression() != codec {
			t.Fatalf("codec %d: header %+v (%v)", codec, got, err)
		}
		back, err := recordbatch.Records(nil, b, got, compression.Codecs{}, 1<<20)
		if err != nil || len(back) != len(recs) {
			t.Fatalf("codec %d: %d records back: %v", codec, len(back), err)
		}
		for i, r := range back {
			w := recs[i]
			if r.TimestampDelta != w.TimestampDelta || r.OffsetDelta != w.OffsetDelta || !bytes.Equal(r.Key, w.Key) ||
				(r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) {
				t.Fatalf("codec %d record %d: %+v", codec, i, r)
			}
		}
		hs, err := recordbatch.ParseHeaders(back[0].Headers)
		if err != nil || len(hs) != 2 || string(hs[0].Value) != "x" || hs[1].Value != nil || hs[1].Key == nil {
			t.Fatalf("headers %+v (%v)", hs, err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil || kb.NumRecords != 3 || kb.CRC != int32(got.CRC) || kb.FirstOffset != 7 || kb.Attributes != int16(codec) {
			t.Fatalf("codec %d: kmsg reads %+v (%v)", codec, kb, err)
		}
		if codec == recordbatch.CompressionNone {
			var kr kmsg.Record
			if err := kr.ReadFrom(kb.Records); err != nil || string(kr.Key) != "k" || len(kr.Headers) != 2 {
				t.Fatalf("kmsg reads record %+v (%v)", kr, err)
			}
		}
	}
}

// TestDecompressLimit: no codec expands past the limit it is given.
func TestDecompressLimit(t *testing.T) {
	big := bytes.Repeat([]byte{0}, 1<<20)
	for codec := recordbatch.CompressionGzip; codec <= recordbatch.CompressionZstd; codec++ {
		c, err := compression.Codecs{}.Compress(codec, nil, big)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (compression.Codecs{}).Decompress(codec, c, 1<<19); !errors.Is(err, recordbatch.ErrTooLarge) {
			t.Fatalf("codec %d: %v, want ErrTooLarge", codec, err)
		}
		if out, err := (compression.Codecs{}).Decompress(codec, c, 1<<20); err != nil || !bytes.Equal(out, big) {
			t.Fatalf("codec %d at the limit: %d bytes, %v", codec, len(out), err)
		}
	}
}

// TestSimple: the plain-producer batch validates and carries no producer.
func TestSimple(t *testing.T) {
	b := recordbatch.Simple(1234, []byte("a"), nil)
	h, err := recordbatch.ParseHeader(b)
	if err := recordbatch.Validate(b); err != nil {
		t.Fatal(err)
	}
	if err != nil || h.ProducerID != -1 || h.PartitionLeaderEpoch != -1 || h.NumRecords != 2 || h.FirstTimestamp != 1234 {
		t.Fatalf("%+v (%v)", h, err)
	}
}
