package recordbatch

// testRecord is one record for makeBatch.
type testRecord struct {
	key, value []byte
	tsDelta    int64
	headers    []RecordHeader
}

// encodeRecords encodes recs as a batch's records, offset deltas 0, 1, ...
func encodeRecords(recs []testRecord) []byte {
	var out []byte
	for i, r := range recs {
		out = AppendRecord(out, Record{TimestampDelta: r.tsDelta, OffsetDelta: int64(i), Key: r.key, Value: r.value, Headers: AppendHeaders(nil, r.headers)})
	}
	return out
}

// makeBatchRaw builds a batch with no producer around an already encoded
// payload, claiming count records.
func makeBatchRaw(attrs int16, firstTS, maxTS int64, count int32, payload []byte) []byte {
	h := NoProducer()
	h.Attributes, h.LastOffsetDelta, h.NumRecords = attrs, count-1, count
	h.FirstTimestamp, h.MaxTimestamp = firstTS, maxTS
	return AppendHeader(nil, h, payload)
}

// makeBatch builds an uncompressed batch of records with key "k" and
// values, timestamps firstTS, firstTS+1, ...
func makeBatch(firstTS int64, values ...[]byte) []byte {
	recs := make([]testRecord, len(values))
	for i, v := range values {
		recs[i] = testRecord{key: []byte("k"), value: v, tsDelta: int64(i)}
	}
	return makeBatchRaw(0, firstTS, firstTS+int64(len(values))-1, int32(len(values)), encodeRecords(recs))
}
