package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/fulldisk"
)

// TestDiskFullCatalogChanges runs a node on a real 30 MiB tmpfs: produce,
// commit a group offset, delete a topic, fill the disk, then try catalog
// changes. Each must either fail with an error or be durable; after a
// restart (with space again) nothing acknowledged may have changed: the
// committed offset is there, the topic whose deletion was acknowledged stays
// deleted (its data in DATA/quarantine, not gone), the topic whose deletion
// failed is there with every record.
func TestDiskFullCatalogChanges(t *testing.T) {
	mnt := fulldisk.Mount(t, 30<<20)
	dataDir := filepath.Join(mnt, "data")
	n := StartNode(t, WithDir(dataDir), WithArgs("--offsets-topic-partitions", "1", "--auto-create-topics=false"))
	const group = "g-disk-full"
	kept, doomed, created := "kept", "doomed", "created-when-full"

	franzCreateTopic(t, n.KafkaAddr, kept, 1)
	franzCreateTopic(t, n.KafkaAddr, doomed, 1)
	recs := makeRecords("disk-full", 50, recentBase())
	for i := range recs {
		recs[i].Partition = 0
	}
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	franzProduce(t, cl, kept, recs, 10)
	franzProduce(t, cl, doomed, makeRecords("doomed", 10, recentBase()), 10)

	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	var committed kadm.Offsets
	committed.Add(kadm.Offset{Topic: kept, Partition: 0, At: 42, LeaderEpoch: -1})
	commitResp, err := adm.CommitOffsets(ctxTimeout(t, 20*time.Second), group, committed)
	if err != nil || commitResp.Error() != nil {
		t.Fatalf("commit offset with room on disk: %v / %v", err, commitResp.Error())
	}
	// Deleted while the disk has room: acknowledged, so it must stay deleted.
	deleteTopic(t, adm, doomed, nil)

	disk := fulldisk.Fill(t, mnt)

	// A delete that cannot be saved fails, and the topic stays.
	deleteTopic(t, adm, kept, kerr.KafkaStorageError)
	// A create that cannot be saved fails, and no topic appears.
	cr, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, 1, nil, created)
	if err == nil && cr.Err == nil {
		t.Errorf("create %s on a full disk succeeded", created)
	} else {
		t.Logf("create on a full disk: %v %v", err, cr.Err)
	}
	// A commit on the full disk is either refused or kept.
	var later kadm.Offsets
	later.Add(kadm.Offset{Topic: kept, Partition: 0, At: 45, LeaderEpoch: -1})
	wantOffset := int64(42)
	if r, err := adm.CommitOffsets(ctxTimeout(t, 20*time.Second), group, later); err == nil && r.Error() == nil {
		wantOffset = 45
		t.Log("commit on a full disk acknowledged; it must survive the restart")
	} else {
		t.Logf("commit on a full disk refused: %v %v", err, r.Error())
	}
	// While the disk is full the node still serves what it holds.
	if got := topicNames(t, adm); !got[kept] || got[doomed] || got[created] {
		t.Errorf("topics on the full disk: %v, want %s only", got, kept)
	}

	n.Stop()
	disk.Free(t)
	n.Start()

	adm = kadm.NewClient(franzClient(t, n.KafkaAddr))
	got := topicNames(t, adm)
	if !got[kept] {
		t.Errorf("topic %s, whose deletion failed, is gone after the restart", kept)
	}
	if got[doomed] {
		t.Errorf("topic %s, whose deletion was acknowledged, came back after the restart", doomed)
	}
	if got[created] {
		t.Errorf("topic %s, whose creation failed, exists after the restart", created)
	}
	franzVerifyPartitions(t, n.KafkaAddr, kept, recs)

	offs, err := adm.FetchOffsets(ctxTimeout(t, 20*time.Second), group)
	if err != nil {
		t.Fatalf("fetch offsets after the restart: %v", err)
	}
	if o, ok := offs.Lookup(kept, 0); !ok || o.Err != nil || o.At != wantOffset {
		t.Errorf("committed offset of %s after the restart: %+v (found %v), want %d", group, o, ok, wantOffset)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "__consumer_offsets-0")); err != nil {
		t.Errorf("__consumer_offsets partition after the restart: %v", err)
	}

	// The deleted topic's data went to the quarantine, logged, and the
	// quarantine command lists and reclaims it.
	if !strings.Contains(n.Logs(), "moved to quarantine") {
		t.Error("no log line names what was quarantined")
	}
	out, err := Spool(t, "", "quarantine", "list", "--admin", n.AdminAddr)
	if err != nil || !strings.Contains(out, "-"+doomed+"-0") {
		t.Fatalf("spool quarantine list: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(filepath.Join(dataDir, "quarantine"))
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), "-"+doomed+"-0") {
		t.Fatalf("DATA/quarantine holds %v, want one entry for %s-0", entries, doomed)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "quarantine", entries[0].Name(), "00000000000000000000.log")); err != nil {
		t.Errorf("quarantined partition lost its segment: %v", err)
	}
	if out, err := Spool(t, "", "quarantine", "purge", "--older-than", "1h", "--admin", n.AdminAddr); err != nil || !strings.Contains(out, "purged 0 entries") {
		t.Fatalf("purge --older-than 1h of a fresh entry: %v\n%s", err, out)
	}
	if out, err := Spool(t, "", "quarantine", "purge", "--admin", n.AdminAddr); err != nil || !strings.Contains(out, "purged 1 entries") {
		t.Fatalf("spool quarantine purge: %v\n%s", err, out)
	}
	if entries, _ := os.ReadDir(filepath.Join(dataDir, "quarantine")); len(entries) != 0 {
		t.Fatalf("quarantine after purge: %v", entries)
	}
}

// deleteTopic deletes topic and checks the outcome is want (nil: success).
func deleteTopic(t *testing.T, adm *kadm.Client, topic string, want error) {
	t.Helper()
	resp, err := adm.DeleteTopics(ctxTimeout(t, 20*time.Second), topic)
	if err != nil {
		t.Fatalf("delete %s: %v", topic, err)
	}
	r, ok := resp[topic]
	if !ok {
		t.Fatalf("delete %s: no answer for the topic", topic)
	}
	if !errors.Is(r.Err, want) && r.Err != want {
		t.Errorf("delete %s: %v, want %v", topic, r.Err, want)
	}
}

// topicNames lists the topics the node's Metadata reports.
func topicNames(t *testing.T, adm *kadm.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	out := map[string]bool{}
	for name := range td {
		out[name] = true
	}
	return out
}
