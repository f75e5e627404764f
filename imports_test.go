package spool_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/spool-log/spool"

// TestHouseImports: the floor does not import the roof. No package under
// internal/ or client/ imports node (the broker) or anything under it
// (the client reads the admin API's bodies from package adminapi): each
// checked over its whole (non-test) dependency graph, as `go list -deps`
// walks it.
func TestHouseImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go not in PATH: %v", err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./internal/...", "./client/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	broker := module + "/node"
	checked := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg, deps := fields[0], fields[1:]
		checked++
		for _, d := range deps {
			if d != broker && !strings.HasPrefix(d, broker+"/") {
				continue
			}
			t.Errorf("%s imports %s (directly or through another package)", pkg, d)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if checked < 2 {
		t.Fatalf("go list named %d packages; want internal/... and client", checked)
	}
}
