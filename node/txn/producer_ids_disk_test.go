package txn

import (
	"path/filepath"
	"testing"

	"github.com/spool-log/spool/internal/fulldisk"
)

// Producer ids are reserved on disk a block at a time: on a full disk the
// reservation fails, and then no id of the unreserved block is handed out
// (InitProducerID answers KAFKA_STORAGE_ERROR), so no id handed out before
// a restart can be handed out again after it.
func TestProducerIDsOnFullDisk(t *testing.T) {
	mnt := fulldisk.Mount(t, 1<<20)
	path := filepath.Join(mnt, "producer-ids")
	p, err := OpenProducerIDs(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	take := func() error {
		id, err := p.Allocate()
		if err == nil {
			if seen[id] {
				t.Fatalf("producer id %d handed out twice", id)
			}
			seen[id] = true
		}
		return err
	}
	if err := take(); err != nil { // reserves the first block
		t.Fatal(err)
	}
	disk := fulldisk.Fill(t, mnt)
	for i := 1; i < ProducerIDBlock; i++ { // the rest of the reserved block
		if err := take(); err != nil {
			t.Fatalf("id %d of a block reserved before the disk filled: %v", i, err)
		}
	}
	for i := 0; i < 3; i++ {
		if err := take(); err == nil {
			t.Fatal("a producer id beyond the reserved block was handed out on a full disk")
		}
	}
	// A restart now reads the last reservation that was saved.
	reopened, err := OpenProducerIDs(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	disk.Free(t)
	p = reopened
	for i := 0; i < 10; i++ {
		if err := take(); err != nil {
			t.Fatal(err)
		}
	}
}
