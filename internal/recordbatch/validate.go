package recordbatch

// Validate checks a concatenation of batches as the log does before it
// appends them: every batch's declared length fits, magic is 2, the CRC-32C
// over attributes..end matches, the record count is positive and equals
// lastOffsetDelta+1, the codec is known, and for uncompressed batches every
// record parses and the records fill the batch exactly. It returns an *Error
// naming the byte position in b of the first bad batch.
func Validate(b []byte) error {
	_, err := Scan(b, nil)
	return err
}

// Scan validates every batch in b as Validate does and, if visit is
// non-nil, calls it with each batch's position and header. It returns the
// number of batches; an error is an *Error.
func Scan(b []byte, visit func(pos int, h Header)) (int, error) {
	if len(b) == 0 {
		return 0, &Error{Kind: Invalid, Reason: "no record batches"}
	}
	n := 0
	for pos := 0; pos < len(b); {
		h, err := Check(b[pos:], false)
		if err != nil {
			err.Offset += pos
			return n, err
		}
		if visit != nil {
			visit(pos, h)
		}
		pos += int(h.Size())
		n++
	}
	return n, nil
}

// Check validates the batch at the start of b (which may run on past it).
// The returned error's Offset is relative to b. With cleaned set it accepts
// what a log cleaner writes: a batch keeps its offset range
// (lastOffsetDelta) when records are dropped from it, as Kafka's
// MemoryRecords.filterTo does, so it may hold fewer records than
// lastOffsetDelta+1.
func Check(b []byte, cleaned bool) (Header, *Error) {
	h, err := checkFrame(b)
	if err != nil {
		return h, err
	}
	if h.NumRecords <= 0 {
		return h, invalid(OffNumRecords, "record count %d, want > 0", h.NumRecords)
	}
	if int64(h.NumRecords) != int64(h.LastOffsetDelta)+1 && (!cleaned || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1) {
		return h, invalid(OffNumRecords, "record count %d with lastOffsetDelta %d", int64(h.NumRecords), int64(h.LastOffsetDelta))
	}
	switch h.Compression() {
	case CompressionNone:
		if e := validateRecords(b[HeaderSize:h.Size()], int(h.NumRecords), h.LastOffsetDelta); e != nil {
			e.Offset += HeaderSize
			return h, e
		}
	case CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
		// Records are inside the compressed payload; counting them would mean
		// decompressing, which the header's count check stands in for.
	default:
		return h, invalid(OffAttributes, "unknown compression codec %d", h.Compression())
	}
	return h, nil
}

// checkFrame checks what every reader of a batch needs before it trusts
// the rest: a whole header, a length that fits in b, magic 2 and the CRC.
func checkFrame(b []byte) (Header, *Error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err.(*Error)
	}
	if h.Length < MinLength {
		return h, corrupt(OffLength, "batch length %d below minimum %d", int64(h.Length), MinLength)
	}
	if h.Size() > int64(len(b)) {
		return h, corrupt(OffLength, "batch length %d runs past the %d bytes given", int64(h.Length), int64(len(b)))
	}
	if h.Magic != Magic {
		return h, invalid(OffMagic, "magic %d, want 2", h.Magic)
	}
	if got := CRC(b[:h.Size()]); got != h.CRC {
		return h, corrupt(OffCRC, "crc %d, computed %d", int64(h.CRC), int64(got))
	}
	return h, nil
}

// Walk calls fn with each whole batch in b and its header, after checking
// only its framing (length, magic, CRC): for readers of a log that hold
// what Check accepted when it was written. An error from the framing is an
// *Error whose Offset is the byte position in b; fn's errors are returned
// as they are.
func Walk(b []byte, fn func(batch []byte, h Header) error) error {
	for pos := 0; pos < len(b); {
		h, err := checkFrame(b[pos:])
		if err != nil {
			err.Offset += pos
			return err
		}
		if err := fn(b[pos:pos+int(h.Size())], h); err != nil {
			return err
		}
		pos += int(h.Size())
	}
	return nil
}

// validateRecords walks uncompressed records: each is a varint length
// followed by exactly that many bytes of attributes, timestamp delta,
// offset delta, key, value and headers.
func validateRecords(b []byte, count int, lastOffsetDelta int32) *Error {
	pos := 0
	prevDelta := int64(-1)
	for i := 0; i < count; i++ {
		start := pos
		length, n := Varint(b[pos:])
		if n <= 0 {
			return invalid(pos, "record %d: bad length varint", i)
		}
		pos += n
		if length < 1 || length > int64(len(b)-pos) {
			return invalid(start, "record %d: length %d out of bounds", int64(i), length)
		}
		delta, reason := walkRecord(b[pos:pos+int(length)], nil)
		pos += int(length)
		if reason != "" {
			return invalid(start, "record %d: %s", i, reason)
		}
		if delta <= prevDelta || delta > int64(lastOffsetDelta) {
			return invalid(start, "record %d: offset delta %d out of order", int64(i), delta)
		}
		prevDelta = delta
	}
	if pos != len(b) {
		return invalid(pos, "%d bytes after the last of %d records", int64(len(b)-pos), int64(count))
	}
	return nil
}
