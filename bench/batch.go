package bench

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodedBatchBytes bounds the size of a record batch of n records of size
// bytes (rawRecordBatch): its header and at most 16 bytes of framing a
// record.
func encodedBatchBytes(n, size int) int64 {
	return 61 + int64(n)*(int64(size)+16)
}

// rawRecordBatch encodes a RecordBatch v2 of n records, each value a copy
// of value, with no key and no headers, uncompressed, as a non-idempotent
// producer sends it.
func rawRecordBatch(n int, value []byte, ts int64) []byte {
	var recs []byte
	for i := 0; i < n; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], 0)                    // base offset: the broker assigns it
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs))) // length: what follows this field
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)          // partition leader epoch -1
	b[16] = 2                                               // magic
	binary.BigEndian.PutUint16(b[21:], 0)                   // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))         // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(ts))          // first timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(ts))          // max timestamp
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff)  // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)              // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)          // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(n))           // records
	b = append(b, recs...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}
