package bench

import "github.com/spool-log/spool/internal/recordbatch"

// encodedBatchBytes bounds the size of a record batch of n records of size
// bytes (rawRecordBatch): its header and at most 16 bytes of framing a
// record.
func encodedBatchBytes(n, size int) int64 {
	return recordbatch.HeaderSize + int64(n)*(int64(size)+16)
}

// rawRecordBatch is a RecordBatch v2 of n records, each value a copy of
// value, with no key and no headers, uncompressed, as a non-idempotent
// producer sends it.
func rawRecordBatch(n int, value []byte, ts int64) []byte {
	values := make([][]byte, n)
	for i := range values {
		values[i] = value
	}
	return recordbatch.Simple(ts, values...)
}
