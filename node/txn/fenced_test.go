package txn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// fencedMarkers answers every write as a partition that saw a newer
// coordinator's marker does.
type fencedMarkers struct{ calls atomic.Int32 }

func (f *fencedMarkers) Write(context.Context, TopicPartition, Marker) error {
	f.calls.Add(1)
	return ErrCoordinatorFenced
}

// A deposed coordinator stops writing a marker the partition fenced
// instead of retrying it until unloaded.
func TestCoordinatorStopsWhenFenced(t *testing.T) {
	f := &fencedMarkers{}
	c := newTestCoordinator(t, &memLog{parts: map[int32][][]byte{}}, &markers{written: map[TopicPartition][]Marker{}})
	c.markers = f
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.writeMarker(ctx, TopicPartition{Topic: "t", Partition: 0}, Marker{ProducerID: 7, CoordinatorEpoch: 1})
	if ctx.Err() != nil || f.calls.Load() != 1 {
		t.Fatalf("writeMarker kept retrying a fenced marker: %d writes, ctx %v", f.calls.Load(), ctx.Err())
	}
}
