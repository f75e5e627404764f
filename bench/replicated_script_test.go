package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// scripts/bench-replicated.sh in its short mode (one pair of 1 s runs per
// figure, both fsync modes), so that neither the script nor the replicated
// baseline can rot: it starts 3-node clusters of this tree's spool, runs
// the raw produce and the baseline, and prints every ratio as a positive
// number. It needs go, jq and python3 (scripts/test installs jq), and
// fails without them. No figure is asserted: the machine is shared.
func TestBenchReplicatedScript(t *testing.T) {
	for _, tool := range []string{"go", "jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("scripts/bench-replicated.sh needs %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spool")
	build := exec.Command("go", "build", "-o", bin, "./cmd/spool")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	table := filepath.Join(dir, "table.md")
	cmd := exec.Command(filepath.Join(root, "scripts", "bench-replicated.sh"))
	cmd.Env = append(os.Environ(), "SPOOL="+bin, "PAIRS=1", "DURATION=1s", "R1=0", "OUT="+table, "TMPDIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench-replicated.sh: %v\n%s", err, out)
	}
	out, err := os.ReadFile(table)
	if err != nil {
		t.Fatal(err)
	}
	// | on | acks=all 1 KiB, ... | ≥ 0.7× | 0.40× | **0.40×** | NO |
	row := regexp.MustCompile(`(?m)^\| (on|off) \| ([^|]+) \| [^|]+ \| ([\d.]+)× \| \*\*([\d.]+)×\*\* \| (yes|NO|—) \|$`)
	rows := row.FindAllStringSubmatch(string(out), -1)
	want := map[string]int{"on": 0, "off": 0}
	for _, r := range rows {
		v, err := strconv.ParseFloat(r[4], 64)
		if err != nil || v <= 0 || r[3] != r[4] {
			t.Errorf("row %q: median %s of one pair %s, want a positive ratio and the pair's", r[0], r[4], r[3])
		}
		want[r[1]]++
	}
	if want["on"] != 4 || want["off"] != 4 {
		t.Fatalf("want 4 ratio rows per fsync mode (1 KiB, 100 B, p50, p99), got %v in:\n%s", want, out)
	}
	for _, fig := range []string{"1 KiB, MB/s", "100 B, records/s", "p50 vs replicated-rtt p50", "p99 vs replicated-rtt p99"} {
		if !strings.Contains(string(out), fig) {
			t.Errorf("no %q row in:\n%s", fig, out)
		}
	}
	t.Logf("\n%s", out)
}
