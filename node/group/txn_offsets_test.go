package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
)

func txnCommit(h *harness, group string, pid int64, epoch int16, offset int64) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", group, pid, epoch, -1
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	return h.c.TxnOffsetCommit(req).Topics[0].Partitions[0].ErrorCode
}

// marker appends the marker the transaction coordinator would write to
// the group's partition and tells the coordinator, as the node does.
func marker(h *harness, group string, pid int64, epoch int16, commit bool) {
	h.t.Helper()
	typ := byte(0)
	if commit {
		typ = 1
	}
	hd := recordbatch.NoProducer()
	hd.ProducerID, hd.ProducerEpoch = pid, epoch
	hd.Attributes = recordbatch.AttrControl | recordbatch.AttrTransactional
	b, err := recordbatch.Build(nil, hd, []recordbatch.Record{{Key: []byte{0, 0, 0, typ}, Value: []byte{0, 0, 0, 0, 0, 0}}}, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	p := h.c.Partition(group)
	if err := h.log.Append(p, b); err != nil {
		h.t.Fatal(err)
	}
	h.c.CompleteTxn(p, pid, epoch, commit)
}

// Transactional offsets are invisible until their commit marker, dropped
// by an abort, fenced for an older epoch, and replayed as the markers in
// the log say.
func TestTxnOffsetCommitVisibility(t *testing.T) {
	h := newHarness(t)
	if got := h.fetch("g", "in", 0)[0]; got != -1 {
		t.Fatalf("offset %d before any commit", got)
	}
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 0, 10), nil)
	if got := h.fetch("g", "in", 0)[0]; got != -1 {
		t.Fatalf("offset %d visible before the marker", got)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, "g", true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "in", Partitions: []int32{0}}}
	if code := h.c.OffsetFetch(req).Topics[0].Partitions[0].ErrorCode; code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require-stable fetch with a pending commit: code %d", code)
	}
	marker(h, "g", 7, 0, true)
	if got := h.fetch("g", "in", 0)[0]; got != 10 {
		t.Fatalf("offset %d after the commit marker, want 10", got)
	}
	// An aborted one is dropped.
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 0, 20), nil)
	marker(h, "g", 7, 0, false)
	if got := h.fetch("g", "in", 0)[0]; got != 10 {
		t.Fatalf("offset %d after an abort, want 10", got)
	}
	// A newer epoch's marker fences the older epoch.
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 1, 30), nil)
	if code := txnCommit(h, "g", 7, 0, 40); code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie's txn commit: code %d", code)
	}
	marker(h, "g", 7, 1, true)
	if got := h.fetch("g", "in", 0)[0]; got != 30 {
		t.Fatalf("offset %d, want 30", got)
	}
	// One left pending across a restart stays pending, then commits.
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 1, 50), nil)
	h.start()
	if got := h.fetch("g", "in", 0)[0]; got != 30 {
		t.Fatalf("offset %d replayed, want 30", got)
	}
	marker(h, "g", 7, 1, true)
	if got := h.fetch("g", "in", 0)[0]; got != 50 {
		t.Fatalf("offset %d after the marker, want 50", got)
	}
	h.start()
	if got := h.fetch("g", "in", 0)[0]; got != 50 {
		t.Fatalf("offset %d replayed, want 50", got)
	}
}

// A plain commit written between a transaction's offsets and its commit
// marker is the later one in the log and stays the group's offset, in
// memory and after a replay (as the cleaner keeps the later record); a
// transaction's offsets written after a plain commit replace it.
func TestTxnOffsetCommitLogOrder(t *testing.T) {
	h := newHarness(t)
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 0, 10), nil)
	if code := commitCode(t, h.commit("g", "", -1, "in", map[int32]int64{0: 20})); code != 0 {
		t.Fatalf("plain commit: code %d", code)
	}
	marker(h, "g", 7, 0, true)
	if got := h.fetch("g", "in", 0)[0]; got != 20 {
		t.Fatalf("offset %d after the marker, want the later plain commit's 20", got)
	}
	h.start()
	if got := h.fetch("g", "in", 0)[0]; got != 20 {
		t.Fatalf("offset %d replayed, want 20", got)
	}
	// Written after the plain commit: the transaction's offset wins.
	wantCode(t, "txn commit", txnCommit(h, "g", 7, 0, 30), nil)
	marker(h, "g", 7, 0, true)
	if got := h.fetch("g", "in", 0)[0]; got != 30 {
		t.Fatalf("offset %d after the second marker, want 30", got)
	}
	h.start()
	if got := h.fetch("g", "in", 0)[0]; got != 30 {
		t.Fatalf("offset %d replayed, want 30", got)
	}
}
