package recordbatch

import "fmt"

// Build appends a batch holding recs to dst. The header is h with Length,
// Magic, CRC and NumRecords (len(recs)) computed; every other field,
// LastOffsetDelta included, is h's as given (a cleaned batch keeps its
// offset range with fewer records). If h's attributes name a codec, the
// records are compressed with codecs.
func Build(dst []byte, h Header, recs []Record, codecs Codecs) ([]byte, error) {
	var payload []byte
	for _, r := range recs {
		payload = AppendRecord(payload, r)
	}
	if c := h.Compression(); c != CompressionNone {
		if codecs == nil {
			return dst, fmt.Errorf("compress batch at offset %d: no codecs configured", h.BaseOffset)
		}
		var err error
		if payload, err = codecs.Compress(c, nil, payload); err != nil {
			return dst, fmt.Errorf("compress batch at offset %d (codec %d): %w", h.BaseOffset, c, err)
		}
	}
	h.NumRecords = int32(len(recs))
	return AppendHeader(dst, h, payload), nil
}

// Simple is an uncompressed batch with no producer of one record per value
// (keys nil, no headers), all at timestamp ts with offset deltas 0, 1, ...:
// what a plain producer sends.
func Simple(ts int64, values ...[]byte) []byte {
	h := NoProducer()
	h.FirstTimestamp, h.MaxTimestamp = ts, ts
	h.LastOffsetDelta = int32(len(values) - 1)
	recs := make([]Record, len(values))
	for i, v := range values {
		recs[i] = Record{OffsetDelta: int64(i), Value: v}
	}
	b, _ := Build(nil, h, recs, nil) // no codec: cannot fail
	return b
}
