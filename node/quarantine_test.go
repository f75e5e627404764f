package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kgo"
)

// quarantined lists DATA/quarantine.
func quarantined(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "quarantine"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A node drops partition data only on its catalog's word that the topic is
// gone (a tombstone), and then moves it to the quarantine with an ERROR line
// naming it; a directory of a topic the catalog does not know, or of
// __consumer_offsets, is kept where it is.
func TestPartitionDataDroppedOnlyOnTheCatalogsWord(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	logger.SetLevel(logrus.WarnLevel)
	hook := logtest.NewLocal(logger)
	cfg.Logger = logger
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "live", 1, nil)
	createTopic(t, adm, "doomed", 1, nil)
	cl := newClient(t, n)
	for _, topic := range []string{"live", "doomed"} {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("acknowledged")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := adm.DeleteTopics(testCtx(t), "doomed")
	if err != nil || resp["doomed"].Err != nil {
		t.Fatalf("delete doomed: %v %v", err, resp["doomed"].Err)
	}
	q := quarantined(t, dir)
	if len(q) != 1 || !strings.HasSuffix(q[0], "Z-doomed-0") {
		t.Fatalf("quarantine after the delete: %v, want one doomed-0 entry", q)
	}
	if _, err := os.Stat(filepath.Join(dir, "doomed-0")); !os.IsNotExist(err) {
		t.Fatalf("doomed-0 still in the data dir: %v", err)
	}
	if seg := filepath.Join(dir, "quarantine", q[0], "00000000000000000000.log"); fileLen(t, seg) == 0 {
		t.Fatal("the quarantined partition lost its records")
	}
	if !loggedError(hook, filepath.Join(dir, "quarantine", q[0])) {
		t.Error("no ERROR line names the quarantined directory")
	}
	stopNode(t, n)

	// What a crash, an older catalog or a lost one may leave: a directory
	// of a topic the catalog never heard of, one of __consumer_offsets the
	// catalog does not list (its catalog is older than the groups), and
	// one of the deleted topic left by a crash before its move.
	payload := []byte("records nobody may delete on a guess")
	for _, d := range []string{"ghost-0", "__consumer_offsets-0", "doomed-0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "00000000000000000000.log"), payload, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hook.Reset()
	cfg.KafkaAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	n = startNode(t, cfg)
	for _, d := range []string{"ghost-0", "__consumer_offsets-0"} {
		raw, err := os.ReadFile(filepath.Join(dir, d, "00000000000000000000.log"))
		if err != nil || !bytes.Equal(raw, payload) {
			t.Errorf("%s, which no tombstone names, was not kept: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "doomed-0")); !os.IsNotExist(err) {
		t.Errorf("doomed-0, whose topic the catalog holds a tombstone of, is still in the data dir: %v", err)
	}
	q = quarantined(t, dir)
	if len(q) != 2 {
		t.Fatalf("quarantine after the restart: %v, want both doomed-0 entries", q)
	}
	if !loggedError(hook, filepath.Join(dir, "quarantine", q[1])) {
		t.Error("no ERROR line names the directory quarantined at start")
	}
	if lp := n.parts.Get("live", 0); lp == nil || lp.Replica.LogEndOffset() != 1 {
		t.Fatal("the live topic lost its partition or its record")
	}
}

func fileLen(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func loggedError(hook *logtest.Hook, path string) bool {
	for _, e := range hook.AllEntries() {
		if e.Level == logrus.ErrorLevel && e.Data["quarantine"] == path {
			return true
		}
	}
	return false
}
