package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNodeCommandServesAndStopsGracefully(t *testing.T) {
	dir := t.TempDir()
	kafka, admin := freeAddr(t), freeAddr(t)
	// Flags and their SPOOL_* equivalents mix.
	t.Setenv("SPOOL_DATA_DIR", dir)
	t.Setenv("SPOOL_FLUSH_POLICY", "every-append")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := runCLIContext(ctx, "", "node", "--kafka-addr", kafka, "--admin-addr", admin, "--node-id", "7", "--log-level", "warn")
		done <- err
	}()

	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		select {
		case err := <-done:
			t.Fatalf("node exited before ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if _, _, err := runCLI(t, "", "topic", "create", "t1", "--brokers", kafka); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "t1-0")); err != nil {
		t.Fatalf("SPOOL_DATA_DIR not used: %v", err)
	}
	out, _, err := runCLI(t, "", "topic", "describe", "t1", "--brokers", kafka)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d", 7)) {
		t.Fatalf("describe should show leader 7: %v\n%s", err, out)
	}

	cancel() // what SIGINT/SIGTERM do
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("graceful stop: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node did not stop")
	}
}

func TestNodeCommandRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"node", "--data-dir", t.TempDir(), "--flush-policy", "sometimes", "--kafka-addr", "127.0.0.1:0", "--admin-addr", ""},
		{"node", "--data-dir", t.TempDir(), "--log-format", "xml", "--kafka-addr", "127.0.0.1:0", "--admin-addr", ""},
	} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("spool %v succeeded", args)
		}
	}
}
