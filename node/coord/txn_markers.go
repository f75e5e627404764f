package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/txn"
)

// errMarkerFenced: the partition knows a newer epoch of the producer than
// the marker's, so a newer coordinator decision superseded it.
var errMarkerFenced = errors.New("marker epoch older than the producer's")

// WriteMarkerLocal writes a marker to a partition this node leads and
// returns once it is committed.
func (t *Txns) WriteMarkerLocal(ctx context.Context, tp txn.TopicPartition, mk txn.Marker) error {
	if _, ok := t.b.Topic(tp.Topic); !ok {
		return txn.ErrPartitionGone
	}
	p, e := t.b.Leader(tp.Topic, tp.Partition)
	if e == kerr.UnknownTopicOrPartition {
		return txn.ErrPartitionGone
	}
	if e != nil {
		return e
	}
	// As a produce: in the log's order under the partition's append
	// lock, not while the leader's round writes it (EnqueueMarker).
	pending, fence, err := p.EnqueueMarker(ctx, mk.ProducerID, mk.Epoch, mk.Commit, mk.CoordinatorEpoch)
	switch fence {
	case hosted.MarkerCoordinatorOld:
		return fmt.Errorf("marker to %s-%d from coordinator epoch %d: %w", tp.Topic, tp.Partition, mk.CoordinatorEpoch, txn.ErrCoordinatorFenced)
	case hosted.MarkerEpochOld:
		return fmt.Errorf("%w: %w", txn.ErrPartitionGone, errMarkerFenced)
	}
	if err != nil {
		return err
	}
	info, commit, err := pending.Appended()
	if err != nil {
		p.SettleProducer(mk.ProducerID, pending, info, err)
		return fmt.Errorf("write marker to %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	if err := commit.Wait(ctx); err != nil {
		return fmt.Errorf("commit marker at %s-%d offset %d: %w", tp.Topic, tp.Partition, info.BaseOffset, err)
	}
	if tp.Topic == group.TopicName {
		t.groupsCompleteTxn(tp.Partition, mk)
	}
	return nil
}

// Markers is txn.Markers as the coordinator writes them: to partitions
// this node leads directly, to others through their leader's admin
// listener.
func (t *Txns) Markers() txn.Markers { return markerWriter{t} }

// markerWriter is txn.Markers: local partitions directly, others through
// their leader's admin listener.
type markerWriter struct{ t *Txns }

// markerRequest is the body of admin.TxnPath+"marker".
type markerRequest struct {
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	Marker    txn.Marker `json:"marker"`
}

type markerResponse struct {
	ErrorCode int16  `json:"error_code"`
	Gone      bool   `json:"gone,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (w markerWriter) Write(ctx context.Context, tp txn.TopicPartition, mk txn.Marker) error {
	t := w.t
	spec, ok := t.b.Topic(tp.Topic)
	if !ok || tp.Partition < 0 || tp.Partition >= spec.Partitions {
		return txn.ErrPartitionGone
	}
	leader := t.b.LeaderOf(tp.Topic, tp.Partition)
	switch {
	case leader < 0:
		return kerr.LeaderNotAvailable
	case leader == t.b.NodeID():
		return t.WriteMarkerLocal(ctx, tp, mk)
	}
	var mr markerResponse
	req := markerRequest{Topic: tp.Topic, Partition: tp.Partition, Marker: mk}
	if err := t.b.PostToBroker(ctx, leader, admin.TxnPath+"marker", req, 4096, &mr); err != nil {
		return err
	}
	switch {
	case mr.Gone:
		return txn.ErrPartitionGone
	case mr.ErrorCode == kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("broker %d: marker to %s-%d: %w", leader, tp.Topic, tp.Partition, txn.ErrCoordinatorFenced)
	case mr.ErrorCode != 0 || mr.Error != "":
		return fmt.Errorf("broker %d: marker to %s-%d: code %d %s", leader, tp.Topic, tp.Partition, mr.ErrorCode, mr.Error)
	}
	return nil
}
