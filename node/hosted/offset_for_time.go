package hosted

import (
	"errors"
	"fmt"
	"os"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
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

// OffsetForTime returns the first record at or after ts: its offset and
// timestamp, or -1, -1 if there is none.
func (p *Partition) OffsetForTime(ts int64) (int64, int64, error) {
	off, bts, err := p.Replica.OffsetForTime(ts)
	if err != nil || bts < 0 {
		return -1, -1, err
	}
	batch, h, err := readBatchAt(p, off)
	if err != nil {
		return -1, -1, err
	}
	if batch == nil || h.LogAppendTime() {
		// Every record carries the batch's append time.
		return off, bts, nil
	}
	recOff, recTS, err := firstRecordAtOrAfter(batch, h, ts)
	if errors.Is(err, recordbatch.ErrTooLarge) || (err == nil && recOff < 0) {
		return off, bts, nil // batch granularity is the best we can do
	}
	if err != nil {
		return -1, -1, err
	}
	return recOff, recTS, nil
}

// readBatchAt reads the whole batch holding offset, or returns nil if the log
// has nothing there.
func readBatchAt(p *Partition, offset int64) ([]byte, recordbatch.Header, error) {
	s, err := p.Replica.Read(offset, 1)
	if err != nil {
		return nil, recordbatch.Header{}, err
	}
	defer s.Release()
	if len(s.Regions) == 0 || s.Regions[0].Length < recordbatch.HeaderSize {
		return nil, recordbatch.Header{}, nil
	}
	r := s.Regions[0]
	hdr := make([]byte, recordbatch.HeaderSize)
	if _, err := r.File.ReadAt(hdr, r.Position); err != nil {
		return nil, recordbatch.Header{}, fmt.Errorf("read batch header: %w", err)
	}
	h, err := recordbatch.ParseHeader(hdr)
	if err != nil {
		return nil, h, err
	}
	if h.Size() > r.Length || h.Size() > maxInspectBytes || h.Size() < recordbatch.HeaderSize {
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
func firstRecordAtOrAfter(batch []byte, h recordbatch.Header, ts int64) (int64, int64, error) {
	recs, err := recordbatch.Payload(batch, h, compression.Codecs{}, maxInspectBytes)
	if err != nil {
		return -1, -1, err
	}
	for i := int32(0); i < h.NumRecords && len(recs) > 0; i++ {
		var r recordbatch.Record
		if r, recs, err = recordbatch.NextRecord(recs); err != nil {
			return -1, -1, fmt.Errorf("record %d: %w", i, err)
		}
		if t := h.FirstTimestamp + r.TimestampDelta; t >= ts {
			return h.BaseOffset + r.OffsetDelta, t, nil
		}
	}
	return -1, -1, nil
}

// MaxTimestamp is the largest batch max-timestamp below the high watermark,
// or -1 if there is none (ListOffsets' MAX_TIMESTAMP). It reads only batch
// headers.
func (p *Partition) MaxTimestamp() (int64, error) {
	maxTS := int64(-1)
	end := p.Replica.HighWatermark()
	off := p.Replica.LogStartOffset()
	for off < end {
		s, err := p.Replica.Read(off, 4<<20)
		if errors.Is(err, partition.ErrOffsetOutOfRange) {
			// Retention moved the start meanwhile: go on from there.
			if start := p.Replica.LogStartOffset(); start > off {
				off = start
				continue
			}
		}
		if err != nil {
			return -1, err
		}
		next, err := s.EachBatchHeader(off, func(_ *os.File, _ int64, h partition.BatchHeader) error {
			maxTS = max(maxTS, h.MaxTimestamp)
			return nil
		})
		s.Release()
		if err != nil {
			return -1, err
		}
		if next == off {
			break
		}
		off = next
	}
	return maxTS, nil
}
