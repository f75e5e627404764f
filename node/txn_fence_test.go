package node

import (
	"errors"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/partition"
)

// appendTxnData appends one transactional data batch of pid straight to
// the partition's replica (the coordinator's verification is not what is
// under test) and returns its offset once committed.
func appendTxnData(t *testing.T, p *localPartition, pid int64, epoch int16, seq int32) int64 {
	t.Helper()
	h := recordbatch.NoProducer()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, epoch, seq
	h.Attributes = recordbatch.AttrTransactional
	now := time.Now().UnixMilli()
	h.FirstTimestamp, h.MaxTimestamp = now, now
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: []byte("k"), Value: []byte("v")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var (
		info   partition.AppendInfo
		commit replica.Commit
	)
	p.WithAppendLock(func() { info, commit, err = p.Replica.Propose(b) })
	if err != nil {
		t.Fatal(err)
	}
	if err := commit.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return info.BaseOffset
}

// A coordinator deposed while it held a Prepare state cannot write its
// stale marker after the new coordinator's: the partition remembers the
// coordinator epoch of the producer's markers (rebuilt from the log after
// a restart) and refuses older ones, so the producer's next transaction
// stays open and pins the last stable offset.
func TestTxnMarkerCoordinatorFenced(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "txn-fence", 1, nil)
	ctx := testCtx(t)
	tp := txn.TopicPartition{Topic: "txn-fence", Partition: 0}
	const pid = 7
	// Txn 1, completed by coordinator B (epoch 5).
	p := n.parts.Get("txn-fence", 0)
	appendTxnData(t, p, pid, 0, 0)
	if err := n.coords.Txns.WriteMarkerLocal(ctx, tp, txn.Marker{ProducerID: pid, Epoch: 0, Commit: true, CoordinatorEpoch: 5}); err != nil {
		t.Fatal(err)
	}
	// Txn 2 opens.
	first := appendTxnData(t, p, pid, 0, 1)
	check := func(n *Node) {
		t.Helper()
		err := n.coords.Txns.WriteMarkerLocal(ctx, tp, txn.Marker{ProducerID: pid, Epoch: 0, Commit: true, CoordinatorEpoch: 4})
		if !errors.Is(err, txn.ErrCoordinatorFenced) {
			t.Fatalf("stale coordinator's marker: %v, want ErrCoordinatorFenced", err)
		}
		// Through a peer's admin listener too, as a remote coordinator posts it.
		err = n.coords.Txns.Markers().Write(ctx, tp, txn.Marker{ProducerID: pid, Epoch: 0, Commit: true, CoordinatorEpoch: 3})
		if !errors.Is(err, txn.ErrCoordinatorFenced) {
			t.Fatalf("stale coordinator's marker (writer): %v, want ErrCoordinatorFenced", err)
		}
		lso, err := n.parts.Get("txn-fence", 0).Stable()
		if err != nil {
			t.Fatal(err)
		}
		if lso != first {
			t.Fatalf("last stable offset %d, want %d (txn 2 open)", lso, first)
		}
	}
	check(n)
	// After a restart the coordinator epoch comes from the log's markers.
	stopNode(t, n)
	n = startNode(t, cfg)
	check(n)
	// The current coordinator still ends txn 2.
	if err := n.coords.Txns.WriteMarkerLocal(ctx, tp, txn.Marker{ProducerID: pid, Epoch: 0, Commit: false, CoordinatorEpoch: 5}); err != nil {
		t.Fatal(err)
	}
}
