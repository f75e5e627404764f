package partition

import "github.com/spool-log/spool/internal/recordbatch"

// Transactions in the log cleaner, after Kafka's CleanedTransactionMetadata.
//
// Before filtering, Clean walks the whole range it cleans in offset order
// and notes, per producer, the transactional data since its last marker; an
// abort marker turns that span into an aborted range, whose records the
// filter then drops. A span whose marker lies past the cleaned range stays
// open and is kept whole: it may still commit. A marker is dropped once no
// record of its transaction is left and its delete horizon has passed: the
// first pass that finds its transaction empty stamps the horizon
// (now+DeleteRetention, KIP-534, as for tombstones), a later pass past it
// removes the marker. A producer's transactional records thus never lose
// their marker, so a rebuild of the aborted-transaction index or of
// producer state from the cleaned log sees every transaction either whole
// or not at all.

// offRange is a transaction's span: its first data offset to its marker.
type offRange struct{ first, marker int64 }

// txnScan collects the aborted transactions of a cleaned range.
type txnScan struct {
	open    map[int64]int64      // producer -> first offset of its transactional data since its last marker
	aborted map[int64][]offRange // producer -> its aborted spans, in offset order
	recs    []recordbatch.Record
}

func newTxnScan() *txnScan {
	return &txnScan{open: map[int64]int64{}, aborted: map[int64][]offRange{}}
}

// isMarker reports whether a batch is a transaction marker (Kafka writes
// no other control batches to a partition's log).
func isMarker(h BatchHeader) bool { return h.Control() && h.Transactional() }

// markerCommits reports whether a marker's control record is a commit
// (key: version int16, type int16; type 0 abort, 1 commit).
func markerCommits(recs []recordbatch.Record) bool {
	return len(recs) > 0 && len(recs[0].Key) >= 4 && recs[0].Key[2] == 0 && recs[0].Key[3] == 1
}

// txnSpanBytes is what the key map's bound counts for an aborted span.
const txnSpanBytes = 48

// note applies one batch; recs are a marker's decoded records (nil for
// other batches). It reports whether it added an aborted span.
func (s *txnScan) note(h BatchHeader, recs []recordbatch.Record) bool {
	switch {
	case isMarker(h):
		first, ok := s.open[h.ProducerID]
		delete(s.open, h.ProducerID)
		if ok && !markerCommits(recs) {
			s.aborted[h.ProducerID] = append(s.aborted[h.ProducerID], offRange{first, h.BaseOffset})
			return true
		}
	case h.Transactional() && !h.Control():
		if _, ok := s.open[h.ProducerID]; !ok {
			s.open[h.ProducerID] = h.BaseOffset
		}
	}
	return false
}

// noteBatch is note for a batch not decoded yet: it decodes markers only.
func (s *txnScan) noteBatch(batch []byte, h BatchHeader, codecs Codecs) error {
	if !h.Transactional() {
		return nil
	}
	if !h.Control() {
		s.note(h, nil)
		return nil
	}
	var err error
	if s.recs, err = recordbatch.Records(s.recs[:0], batch, h, codecs, maxDecompressedBytes); err != nil {
		return err
	}
	s.note(h, s.recs)
	return nil
}

// abortedAt reports whether producer pid's transactional data batch at
// offset lies in one of its aborted spans. Calls must come in offset order
// per producer: spans behind are dropped.
func (s *txnScan) abortedAt(pid, offset int64) bool {
	spans := s.aborted[pid]
	for len(spans) > 0 && spans[0].marker < offset {
		spans = spans[1:]
	}
	s.aborted[pid] = spans
	return len(spans) > 0 && spans[0].first <= offset && offset < spans[0].marker
}
