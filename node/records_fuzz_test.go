package node

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// codecSeeds are real compressions of a few payloads in every codec, as
// kafkaCodecs writes them (the framings clients send).
func codecSeeds(t testing.TB) [][2]any {
	payloads := [][]byte{
		{},
		[]byte("a"),
		bytes.Repeat([]byte("spool"), 20_000), // several xerial blocks
		rawBatch(-1, -1, -1, 1000, "x", "yy")[partition.BatchHeaderSize:],
	}
	var out [][2]any
	for codec := partition.CompressionGzip; codec <= partition.CompressionZstd; codec++ {
		for _, p := range payloads {
			c, err := kafkaCodecs{}.Compress(codec, nil, p)
			if err != nil {
				t.Fatalf("compress codec %d: %v", codec, err)
			}
			out = append(out, [2]any{uint8(codec), c})
		}
	}
	return out
}

// FuzzDecompress: every codec's decompression path takes any bytes without
// panicking, and what it returns stays within its bound.
func FuzzDecompress(f *testing.F) {
	for _, s := range codecSeeds(f) {
		f.Add(s[0].(uint8), s[1].([]byte))
	}
	for n := 0; n <= 20; n++ { // the xerial header cut at every length
		f.Add(uint8(partition.CompressionSnappy), append(append([]byte{}, xerialMagic...), make([]byte, 12)...)[:n])
	}
	f.Add(uint8(partition.CompressionLZ4), []byte{0x04, 0x22, 0x4d, 0x18})
	f.Add(uint8(partition.CompressionZstd), []byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Add(uint8(partition.CompressionGzip), []byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		out, err := decompress(src, int(codec%8))
		if err == nil && len(out) > maxInspectBytes && codec%8 != 0 {
			t.Fatalf("codec %d: %d bytes out, over the %d bound", codec%8, len(out), maxInspectBytes)
		}
		if out, err := (kafkaCodecs{}).Decompress(int(codec%8), src, 1<<20); err == nil && len(out) > 1<<20 {
			t.Fatalf("codec %d: %d bytes out, over the limit", codec%8, len(out))
		}
	})
}

// TestDecompressRoundTrip: what kafkaCodecs compresses, decompress reads
// back, for every codec (the fuzz target's seeds are valid input).
func TestDecompressRoundTrip(t *testing.T) {
	want := bytes.Repeat([]byte("spool"), 20_000)
	for codec := partition.CompressionGzip; codec <= partition.CompressionZstd; codec++ {
		c, err := kafkaCodecs{}.Compress(codec, nil, want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decompress(c, codec)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("codec %d: %d bytes back, err %v", codec, len(got), err)
		}
	}
}

// TestXerialShortHeader: snappy data that starts with the xerial magic but
// is cut before the end of the 16-byte header is an error, not a panic.
func TestXerialShortHeader(t *testing.T) {
	for n := len(xerialMagic); n < 16; n++ {
		src := append(append([]byte{}, xerialMagic...), bytes.Repeat([]byte{1}, n-len(xerialMagic))...)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%d bytes: panic %v", n, r)
				}
			}()
			if _, err := decompress(src, partition.CompressionSnappy); err == nil {
				t.Fatalf("%d bytes: truncated xerial header decompressed", n)
			}
		}()
	}
}

// TestProduceShortXerialToCompactedTopic is the path to the panic:
// a compacted topic checks every batch's keys, so it decompresses a snappy
// batch on produce. A batch whose records are a cut xerial header gets an
// error code for its partition, and the connection keeps serving.
func TestProduceShortXerialToCompactedTopic(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "table", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	cl := newClient(t, n)

	for extra := 0; extra < 16-len(xerialMagic); extra++ {
		b := rawBatch(-1, -1, -1, 1000, "v")[:partition.BatchHeaderSize]
		b = append(b, xerialMagic...)
		b = append(b, make([]byte, extra)...)
		binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
		binary.BigEndian.PutUint16(b[21:], uint16(partition.CompressionSnappy))
		rawBatchFix(b)
		got := produceRaw(t, cl, "table", b)
		if got.ErrorCode != kerr.CorruptMessage.Code && got.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("%d-byte xerial payload: error code %d, want CORRUPT_MESSAGE or INVALID_RECORD", len(xerialMagic)+extra, got.ErrorCode)
		}
	}
	// The same connection still appends a good batch.
	createTopic(t, adm, "plain", 1, nil)
	if got := produceRaw(t, cl, "plain", rawBatch(-1, -1, -1, 1000, "k")); got.ErrorCode != 0 {
		t.Fatalf("good batch after the bad ones: error %d", got.ErrorCode)
	}
}

// FuzzFirstRecordAtOrAfter: the record walk ListOffsets by time does inside
// one batch takes any batch (compressed or not) without panicking.
func FuzzFirstRecordAtOrAfter(f *testing.F) {
	f.Add(rawBatch(-1, -1, -1, 1000, "a", "bb", "ccc"), int64(1000))
	f.Add(rawBatch(7, 0, 0, 5, "x"), int64(-1))
	for _, s := range codecSeeds(f) {
		b := rawBatch(-1, -1, -1, 1000, "v")[:partition.BatchHeaderSize]
		b = append(b, s[1].([]byte)...)
		binary.BigEndian.PutUint16(b[21:], uint16(s[0].(uint8)))
		f.Add(b, int64(1000))
	}
	f.Fuzz(func(t *testing.T, batch []byte, ts int64) {
		if len(batch) < partition.BatchHeaderSize {
			return
		}
		h, err := partition.ParseBatchHeader(batch)
		if err != nil {
			return
		}
		off, got, err := firstRecordAtOrAfter(batch, h, ts)
		if err == nil && off >= 0 && got < ts {
			t.Fatalf("record at %d has timestamp %d < %d", off, got, ts)
		}
	})
}
