package node

import (
	"testing"

	"github.com/spool-log/spool/partition"
)

// TestEndOffsetForEpoch: Kafka's LeaderEpochFileCache.endOffsetFor, with
// the leader's current epoch counted from the log end until a batch is
// written in it.
func TestEndOffsetForEpoch(t *testing.T) {
	cache := []partition.EpochEntry{{Epoch: 2, StartOffset: 10}, {Epoch: 5, StartOffset: 40}, {Epoch: 6, StartOffset: 90}}
	for _, tc := range []struct {
		name      string
		current   int32
		logEnd    int64
		requested int32
		epoch     int32
		end       int64
	}{
		{"older than the cache", 6, 100, 1, 1, 10},
		{"cached", 6, 100, 2, 2, 40},
		{"between cached epochs: the older one, ending where the newer starts", 6, 100, 3, 2, 40},
		{"the latest", 6, 100, 6, 6, 100},
		{"newer than any", 6, 100, 7, -1, -1},
		{"undefined", 6, 100, -1, -1, -1},
		{"the current epoch, nothing written in it yet", 8, 100, 8, 8, 100},
		{"the latest cached, ended by the current epoch's election", 8, 100, 6, 6, 100},
		{"between the latest cached and the current", 8, 100, 7, 6, 100},
		{"a follower (no current epoch)", -1, 100, 6, 6, 100},
	} {
		epoch, end := endOffsetForEpoch(append([]partition.EpochEntry(nil), cache...), tc.current, tc.logEnd, tc.requested)
		if epoch != tc.epoch || end != tc.end {
			t.Errorf("%s: epoch %d end %d, want %d %d", tc.name, epoch, end, tc.epoch, tc.end)
		}
	}
	if epoch, end := endOffsetForEpoch(nil, 0, 0, 0); epoch != 0 || end != 0 {
		t.Errorf("an empty log's first epoch: %d %d, want 0 0", epoch, end)
	}
	if epoch, end := endOffsetForEpoch(nil, -1, 0, 0); epoch != -1 || end != -1 {
		t.Errorf("no epoch at all: %d %d, want -1 -1", epoch, end)
	}
}
