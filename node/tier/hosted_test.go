package tier

import (
	"testing"

	"github.com/spool-log/spool/node/topicconfig"
)

// TestManifestKeptWhileItsPartitionOpens: a manifest is opened while its
// partition opens, before the partition is among the hosted ones; an
// uploader pass in between must not forget it (it did: the partition was
// then never uploaded nor read from the store on that node, seen as
// TestTierConsumeFromStore's leader of partition 1 uploading nothing). A
// partition that was hosted and is closed is forgotten.
func TestManifestKeptWhileItsPartitionOpens(t *testing.T) {
	var hosted []Hosted
	svc := &Service{manifests: make(map[string]*Manifest), hostedOnce: make(map[string]bool),
		hosted: func() []Hosted { return hosted }}
	dir := t.TempDir()
	if _, err := svc.OpenManifest(dir, true); err != nil {
		t.Fatal(err)
	}
	if got := svc.partitions(); len(got) != 0 {
		t.Fatalf("%d partitions before the partition is hosted", len(got))
	}
	settings := func() topicconfig.Settings { return topicconfig.Settings{RemoteStorage: true} }
	hosted = []Hosted{{Dir: dir, Topic: "t", Index: 0, Settings: settings}}
	if got := svc.partitions(); len(got) != 1 {
		t.Fatalf("the manifest opened before its partition was hosted is gone: %d partitions", len(got))
	}
	if _, ok := svc.manifest(dir); !ok {
		t.Fatal("the read side does not see the manifest")
	}
	hosted = nil
	svc.partitions()
	if _, ok := svc.manifest(dir); ok {
		t.Fatal("a closed partition's manifest is kept")
	}
}
