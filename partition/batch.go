package partition

import "github.com/spool-log/spool/internal/recordbatch"

// The RecordBatch v2 format is internal/recordbatch's; partition names the
// parts its callers use, so they need not import it for a header.

// BatchHeader is the fixed header of a Kafka RecordBatch v2.
type BatchHeader = recordbatch.Header

// BatchHeaderSize is the size of a RecordBatch v2 header, up to and
// including the record count.
const BatchHeaderSize = recordbatch.HeaderSize

// Header fields Append stamps in place, and the smallest legal batch
// length (a header and no records) that readers check.
const (
	offBaseOffset     = recordbatch.OffBaseOffset
	offLeaderEpoch    = recordbatch.OffLeaderEpoch
	offCRC            = recordbatch.OffCRC
	offAttributes     = recordbatch.OffAttributes
	offMaxTimestamp   = recordbatch.OffMaxTimestamp
	attrTimestampType = recordbatch.AttrTimestampType
	minBatchLength    = recordbatch.MinLength
)

// ParseBatchHeader decodes the header at the start of b. It checks only that
// b holds a whole header; it does not check the magic, length or CRC (see
// ValidateBatches for that).
func ParseBatchHeader(b []byte) (BatchHeader, error) { return recordbatch.ParseHeader(b) }

// ValidateBatches checks a concatenation of RecordBatch v2 exactly as Append
// does, without writing anything (recordbatch.Validate). It returns a
// *BatchError naming the byte position in b of the first bad batch.
func ValidateBatches(b []byte) error { return recordbatch.Validate(b) }

// batchCRC computes the CRC-32C a batch's header should carry.
func batchCRC(batch []byte) uint32 { return recordbatch.CRC(batch) }
