package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/spool-log/spool/partition"
)

// ListOffsets by time answers the offset of the first record whose timestamp
// is >= T, as Kafka does. The partition's time index finds the batch; this
// file reads that one batch and walks its records, decompressing it if
// needed. Only timestamp lookups come here; produce and fetch never look
// inside a batch.

// maxInspectBytes bounds a batch read or decompressed for a lookup, so a
// compressed batch that expands without limit cannot exhaust memory.
const maxInspectBytes = 64 << 20

var errTooLarge = errors.New("batch too large to inspect")

// recordOffsetForTime returns the first record at or after ts: its offset
// and timestamp, or -1, -1 if there is none.
func (p *localPartition) recordOffsetForTime(ts int64) (int64, int64, error) {
	off, bts, err := p.replica.OffsetForTime(ts)
	if err != nil || bts < 0 {
		return -1, -1, err
	}
	batch, h, err := p.readBatchAt(off)
	if err != nil {
		return -1, -1, err
	}
	if batch == nil || h.LogAppendTime() {
		// Every record carries the batch's append time.
		return off, bts, nil
	}
	recOff, recTS, err := firstRecordAtOrAfter(batch, h, ts)
	if errors.Is(err, errTooLarge) || (err == nil && recOff < 0) {
		return off, bts, nil // batch granularity is the best we can do
	}
	if err != nil {
		return -1, -1, err
	}
	return recOff, recTS, nil
}

// readBatchAt reads the whole batch holding offset, or returns nil if the log
// has nothing there.
func (p *localPartition) readBatchAt(offset int64) ([]byte, partition.BatchHeader, error) {
	s, err := p.replica.Read(offset, 1)
	if err != nil {
		return nil, partition.BatchHeader{}, err
	}
	defer s.Release()
	if len(s.Regions) == 0 || s.Regions[0].Length < partition.BatchHeaderSize {
		return nil, partition.BatchHeader{}, nil
	}
	r := s.Regions[0]
	hdr := make([]byte, partition.BatchHeaderSize)
	if _, err := r.File.ReadAt(hdr, r.Position); err != nil {
		return nil, partition.BatchHeader{}, fmt.Errorf("read batch header: %w", err)
	}
	h, err := partition.ParseBatchHeader(hdr)
	if err != nil {
		return nil, h, err
	}
	if h.Size() > r.Length || h.Size() > maxInspectBytes || h.Size() < partition.BatchHeaderSize {
		return nil, h, nil
	}
	batch := make([]byte, h.Size())
	if _, err := r.File.ReadAt(batch, r.Position); err != nil {
		return nil, h, fmt.Errorf("read batch: %w", err)
	}
	return batch, h, nil
}

// firstRecordAtOrAfter walks a batch's records for the first with a
// timestamp >= ts.
func firstRecordAtOrAfter(batch []byte, h partition.BatchHeader, ts int64) (int64, int64, error) {
	recs, err := decompress(batch[partition.BatchHeaderSize:], h.Compression())
	if err != nil {
		return -1, -1, err
	}
	for i := int32(0); i < h.NumRecords && len(recs) > 0; i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || length > int64(len(recs)-n) {
			return -1, -1, fmt.Errorf("record %d: bad length", i)
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(rec) < 1 {
			return -1, -1, fmt.Errorf("record %d: empty", i)
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			return -1, -1, fmt.Errorf("record %d: bad timestamp delta", i)
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			return -1, -1, fmt.Errorf("record %d: bad offset delta", i)
		}
		if t := h.FirstTimestamp + tsDelta; t >= ts {
			return h.BaseOffset + offDelta, t, nil
		}
	}
	return -1, -1, nil
}

// xerialMagic starts snappy data in the xerial framing Java clients use.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderSize is the magic, then the version and the compatible
// version as two int32s.
const xerialHeaderSize = 16

func decompress(src []byte, codec int) ([]byte, error) {
	limited := func(r io.Reader) ([]byte, error) {
		b, err := io.ReadAll(io.LimitReader(r, maxInspectBytes+1))
		if err != nil {
			return nil, err
		}
		if len(b) > maxInspectBytes {
			return nil, errTooLarge
		}
		return b, nil
	}
	switch codec {
	case partition.CompressionNone:
		return src, nil
	case partition.CompressionGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return limited(r)
	case partition.CompressionSnappy:
		if !bytes.HasPrefix(src, xerialMagic) {
			return snappyBlock(src, nil)
		}
		// magic, version and compatible version, then [len][block]...
		if len(src) < xerialHeaderSize {
			return nil, errors.New("snappy: truncated xerial header")
		}
		var out []byte
		for rest := src[xerialHeaderSize:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, errors.New("snappy: truncated xerial chunk length")
			}
			n := int(binary.BigEndian.Uint32(rest))
			if n < 0 || n > len(rest)-4 {
				return nil, errors.New("snappy: xerial chunk runs past the data")
			}
			var err error
			if out, err = snappyBlock(rest[4:4+n], out); err != nil {
				return nil, err
			}
			rest = rest[4+n:]
		}
		return out, nil
	case partition.CompressionLZ4:
		return limited(lz4.NewReader(bytes.NewReader(src)))
	case partition.CompressionZstd:
		d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderMaxMemory(maxInspectBytes), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		return limited(d)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func snappyBlock(src, dst []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > maxInspectBytes-len(dst) {
		return nil, errTooLarge
	}
	b, err := snappy.Decode(nil, src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return append(dst, b...), nil
}
