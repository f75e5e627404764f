//go:build benchkfake

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestBenchKfakeServesAndPersists(t *testing.T) {
	addr := freeAddr(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := runCLIContext(ctx, "", "bench", "kfake", "--addr", addr, "--data-dir", dir)
		done <- err
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, err := runCLI(t, "", "topic", "list", "--brokers", addr, "--timeout", "500ms"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("kfake never answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep := runBenchJSON(t, "bench", "produce", "--brokers", addr, "--topic", "kf", "--count", "1000")
	if res := resultNamed(t, rep, "produce"); res.Records != 1000 {
		t.Fatalf("produce to kfake: %+v", res)
	}
	var segs []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Size() > 1000*1024 {
			segs = append(segs, p)
		}
		return nil
	})
	if len(segs) == 0 {
		t.Fatalf("kfake wrote no file holding the 1000 KiB produced under %s", dir)
	}
}
