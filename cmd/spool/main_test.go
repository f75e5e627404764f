package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// runCLI runs the spool command in-process and returns what it printed.
func runCLI(t testing.TB, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCLIContext(ctx, stdin, args...)
}

func runCLIContext(ctx context.Context, stdin string, args ...string) (string, string, error) {
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// testNode starts an in-process node on free loopback ports; each option
// adjusts its config first.
func testNode(t testing.TB, options ...func(*node.Config)) *node.Node {
	t.Helper()
	return nodetest.Start(t, options...)
}

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestNoNodeAnswersIsAClearError(t *testing.T) {
	addr := freeAddr(t) // nothing listens here
	// A refused connection is reported at once, not after --timeout: the
	// run's own deadline is far shorter than the minute given.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err := runCLIContext(ctx, "", "topic", "list", "--brokers", addr, "--timeout", "60s")
	if err == nil {
		t.Fatal("topic list with no node succeeded")
	}
	if !strings.Contains(err.Error(), "nothing listens at "+addr+" (connection refused)") || !strings.Contains(err.Error(), "--brokers") {
		t.Fatalf("error does not say what to do: %v", err)
	}
	// A node that accepts but never answers is waited for up to --timeout.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = runCLI(t, "", "topic", "list", "--brokers", ln.Addr().String(), "--timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "no Spool node answered at "+ln.Addr().String()) {
		t.Fatalf("silent listener: %v", err)
	}
}

func TestNodeRejectsClientFlags(t *testing.T) {
	for _, flag := range []string{"--brokers=127.0.0.1:1", "--admin=127.0.0.1:1", "--timeout=1s"} {
		_, _, err := runCLI(t, "", "node", "--data-dir", t.TempDir(), flag)
		name, _, _ := strings.Cut(flag, "=")
		if err == nil || !strings.Contains(err.Error(), name+" is for the client commands") {
			t.Errorf("spool node %s: %v", flag, err)
		}
	}
	// The same settings from the environment are no mistake: one shell
	// exports SPOOL_BROKERS for the client and starts nodes too.
	t.Setenv("SPOOL_BROKERS", "127.0.0.1:1")
	t.Setenv("SPOOL_TIMEOUT", "1s")
	_, _, err := runCLI(t, "", "node", "--data-dir", t.TempDir(), "--retention-ms", "-5")
	if err == nil || !strings.Contains(err.Error(), "--retention-ms -5") {
		t.Errorf("spool node with SPOOL_BROKERS set: %v, want it to go on to its own flags", err)
	}
}

func TestNodePortClashNamesTheFlag(t *testing.T) {
	for _, flag := range []string{"--kafka-addr", "--admin-addr", "--gossip-addr"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"node", "--data-dir", t.TempDir(), "--log-level", "error", "--gossip-addr", freeAddr(t),
			"--kafka-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", flag, ln.Addr().String()}
		_, _, err = runCLI(t, "", args...)
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), flag+" "+ln.Addr().String()+" is in use") {
			t.Errorf("%s on a taken port: %v", flag, err)
		}
	}
}

func TestBrokersFromEnvironment(t *testing.T) {
	n := testNode(t)
	t.Setenv("SPOOL_BROKERS", n.KafkaAddr())
	if _, _, err := runCLI(t, "", "topic", "create", "envtopic", "-p", "1"); err != nil {
		t.Fatalf("topic create with SPOOL_BROKERS: %v", err)
	}
	// A flag beats the environment.
	t.Setenv("SPOOL_BROKERS", freeAddr(t))
	out, _, err := runCLI(t, "", "topic", "list", "--brokers", n.KafkaAddr())
	if err != nil || !strings.Contains(out, "envtopic") {
		t.Fatalf("topic list with --brokers over SPOOL_BROKERS: %v\n%s", err, out)
	}
}

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{
		"data-dir":             "SPOOL_DATA_DIR",
		"brokers":              "SPOOL_BROKERS",
		"advertise-kafka-addr": "SPOOL_ADVERTISE_KAFKA_ADDR",
	} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q, want %q", flag, got, want)
		}
	}
}
