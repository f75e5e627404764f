package hosted

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

func TestShutdownCheckpointCodec(t *testing.T) {
	in := map[string]replica.ShutdownPoint{
		"orders-0":   {Log: partition.ShutdownPoint{Offset: 120, CleanBase: 100, CleanSize: 4096}, Commit: &raftlog.CommitPoint{Commit: 130, LastIndex: 131, LastTerm: 4}},
		"a-b.c_d-12": {Log: partition.ShutdownPoint{Offset: 0, CleanBase: 0, CleanSize: 0}},
	}
	b := encodeShutdownCheckpoint(in)
	out, err := DecodeShutdownCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("decoded %d entries, want %d", len(out), len(in))
	}
	for name, p := range in {
		q, ok := out[name]
		if !ok || q.Log != p.Log || (p.Commit == nil) != (q.Commit == nil) || (p.Commit != nil && *p.Commit != *q.Commit) {
			t.Fatalf("entry %s decoded as %+v, want %+v", name, q, p)
		}
	}
	// Any damaged byte, or a cut anywhere, and the file is not used.
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x20
		if _, err := DecodeShutdownCheckpoint(d); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("byte %d damaged: %v, want it refused", i, err)
		}
		if _, err := DecodeShutdownCheckpoint(b[:i]); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("cut at %d: %v, want it refused", i, err)
		}
	}
	// Whole and checksummed, but naming no partition directory.
	for _, name := range []string{"../escape-1", "noindex", "x-01", "x-1 2"} {
		bad := encodeShutdownCheckpoint(map[string]replica.ShutdownPoint{name: {}})
		if _, err := DecodeShutdownCheckpoint(bad); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("entry %q: %v, want it refused", name, err)
		}
	}
}

// TestShutdownCheckpointKeepsUntakenEntries: entries of directories no open
// took are written again at the next stop (nothing touched them), those of
// directories gone are dropped, and a taken entry is handed over once.
func TestShutdownCheckpointKeepsUntakenEntries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kept-0", "opened-0"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := map[string]replica.ShutdownPoint{
		"kept-0":   {Log: partition.ShutdownPoint{Offset: 5, CleanSize: 100}},
		"opened-0": {Log: partition.ShutdownPoint{Offset: 7, CleanSize: 200}},
		"gone-0":   {Log: partition.ShutdownPoint{Offset: 9, CleanSize: 300}},
	}
	if err := WriteShutdownCheckpoint(dir, in); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	sp := TakeShutdownCheckpoint(dir, log)
	if _, err := os.Stat(filepath.Join(dir, ShutdownCheckpointFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint not removed when taken: %v", err)
	}
	p, written := sp.Take(filepath.Join(dir, "opened-0"))
	if p == nil || p.Log.Offset != 7 || written.IsZero() {
		t.Fatalf("take: %+v at %v", p, written)
	}
	if again, _ := sp.Take(filepath.Join(dir, "opened-0")); again != nil {
		t.Fatal("an entry was handed over twice")
	}
	want := map[string]replica.ShutdownPoint{"kept-0": in["kept-0"]}
	if got := sp.Untaken(dir); !maps.Equal(got, want) {
		t.Fatalf("untaken %v, want %v", got, want)
	}
}
