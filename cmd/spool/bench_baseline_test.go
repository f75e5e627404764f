package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The baseline's servers run this binary's hidden `bench baseline-server`
// in a process of their own. Under test this binary is the test binary, so
// a server is the test binary running TestBaselineServerProcess, which
// serves only when the environment says it is such a process.
func init() {
	baselineServerCommand = func(args ...string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBaselineServerProcess$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), "SPOOL_TEST_BASELINE_SERVER=1")
		return cmd, nil
	}
}

func TestBaselineServerProcess(t *testing.T) {
	if os.Getenv("SPOOL_TEST_BASELINE_SERVER") != "1" {
		t.Skip("the server process the baseline tests start; not a test of its own")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	root := newRootCmd()
	root.SetArgs(append([]string{"bench", "baseline-server"}, args...))
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// The baseline runs what --only names, in order, each through a server
// process that is this binary's hidden `bench baseline-server`.
func TestBenchBaselineOnly(t *testing.T) {
	dir := t.TempDir()
	rep := runBenchJSON(t, "bench", "baseline", "--duration", "100ms", "--only", "rtt, append-rtt", "--dir", dir,
		"--record-size", "100", "--fsync")
	if len(rep.Results) != 2 || rep.Results[0].Name != "rtt" || rep.Results[1].Name != "append-rtt" {
		t.Fatalf("--only rtt,append-rtt gave %+v", rep.Results)
	}
	if r := rep.Results[1]; r.Records <= 0 || r.Bytes != r.Records*100 || rep.Settings["fsync"] != true || rep.Settings["dir"] != dir {
		t.Fatalf("append-rtt %+v with settings %v", r, rep.Settings)
	}
	_, errOut, err := runCLI(t, "", "bench", "baseline", "--duration", "100ms", "--only", "append,nope")
	if err == nil || !strings.Contains(err.Error(), "append-rtt") {
		t.Fatalf("--only append,nope: err %v (stderr %s), want the list of known measurements", err, errOut)
	}
}
