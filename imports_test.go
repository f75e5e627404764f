package spool_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/spool-log/spool"

// clientMayImport is what of node/ the client package still imports: the
// admin API's response types (and node/leadership, which node/admin
// imports), shared with the handlers that write them. The house table lets
// client import only franz-go and membership types; these go once the
// admin API's wire types have a package of their own.
var clientMayImport = map[string]bool{
	module + "/node/admin":      true,
	module + "/node/datadir":    true,
	module + "/node/leadership": true,
	module + "/node/scrub":      true,
}

// TestHouseImports: the floor does not import the roof. No package under
// internal/ imports node (the broker) or anything under it, and client/
// does not import the broker: each checked over its whole (non-test)
// dependency graph, as `go list -deps` walks it.
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
		client := pkg == module+"/client" || strings.HasPrefix(pkg, module+"/client/")
		for _, d := range deps {
			if d != broker && !strings.HasPrefix(d, broker+"/") {
				continue
			}
			if client && clientMayImport[d] {
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
