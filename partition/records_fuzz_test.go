package partition

import (
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
)

// FuzzCheckKeys: the compacted-topic key check over any single batch that
// passes validation (its CRC recomputed, so fuzzing reaches the records),
// compressed with gzip or not, never panics.
func FuzzCheckKeys(f *testing.F) {
	payload := encodeRecords([]testRecord{{key: []byte("k"), value: []byte("v")}, {key: nil, value: []byte("w")}})
	f.Add(int16(0), int32(2), payload)
	z, _ := compression.Codecs{}.Compress(recordbatch.CompressionGzip, nil, payload)
	f.Add(int16(recordbatch.CompressionGzip), int32(2), z)
	f.Add(int16(recordbatch.CompressionGzip), int32(1), []byte{0x1f, 0x8b, 8})
	f.Fuzz(func(t *testing.T, attrs int16, count int32, payload []byte) {
		b := makeBatchRaw(attrs, 1, 1, count, payload)
		h, err := ParseBatchHeader(b)
		if err != nil || recordbatch.Validate(b) != nil {
			return
		}
		_ = checkKeys(b, []batchAt{{pos: 0, h: h}}, compression.Codecs{})
	})
}
