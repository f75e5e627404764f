package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/partition"
)

// TestScrubCommand flips a payload byte of a sealed segment under a running
// node, starts a pass with `spool scrub --start`, and reads the finding back
// with `spool scrub`: topic, partition, the batch's offsets, segment,
// position and the CRC reason.
func TestScrubCommand(t *testing.T) {
	var dataDir string
	n := testNode(t, func(c *node.Config) {
		dataDir = c.DataDir
		c.Topic.SegmentBytes = 1024
		c.ScrubRate = 64 << 20
		c.ScrubInterval = time.Hour // passes only when asked
	})
	admin := []string{"--admin", n.AdminAddr()}

	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("scrubbed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ { // one batch each, about 170 bytes: several sealed segments
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%0100d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	out, _, err := runCLI(t, "", append([]string{"scrub"}, admin...)...)
	if err != nil || !strings.Contains(out, "no corrupt batch known") || !strings.Contains(out, "67108864 bytes/s") {
		t.Fatalf("spool scrub on a sound log: %v\n%s", err, out)
	}

	seg := filepath.Join(dataDir, "scrubbed-0", fmt.Sprintf("%020d.log", 0))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	first, err := partition.ParseBatchHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	second, err := partition.ParseBatchHeader(b[first.Size():])
	if err != nil {
		t.Fatal(err)
	}
	end := first.Size() + second.Size()
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{b[end-1] ^ 0x10}, end-1); err != nil {
		t.Fatal(err)
	}
	f.Close()

	if out, _, err := runCLI(t, "", append([]string{"scrub", "--start"}, admin...)...); err != nil || !strings.Contains(out, "scrub pass requested") {
		t.Fatalf("spool scrub --start: %v\n%s", err, out)
	}
	want := []string{"scrubbed", "0", "1-1", filepath.Base(seg), fmt.Sprint(first.Size()), fmt.Sprint(second.Size()), "corrupt", "crc"}
	retry.Run(t, 20*time.Second, func() error {
		out, _, err = runCLI(t, "", append([]string{"scrub"}, admin...)...)
		if err != nil {
			t.Fatalf("spool scrub: %v", err)
		}
		// The finding shows once the pass marks it; the counts once the
		// pass is over.
		return retry.Check(strings.Contains(out, "CORRUPT BATCHES") && strings.Contains(out, " 1 passes done"), "no finding yet:\n%s", out)
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	row := strings.Fields(lines[len(lines)-1])
	if len(row) < len(want) || !strings.Contains(out, "1 corrupt batches found") {
		t.Fatalf("spool scrub printed:\n%s", out)
	}
	for i, w := range want[:6] {
		if row[i] != w {
			t.Fatalf("column %d is %q, want %q in:\n%s", i, row[i], w, out)
		}
	}
	if !strings.Contains(lines[len(lines)-1], "crc") {
		t.Fatalf("reason does not name the CRC:\n%s", out)
	}
}

// With the scrubber off, `spool scrub` says so and --start is refused.
func TestScrubCommandOff(t *testing.T) {
	n := testNode(t, func(c *node.Config) { c.ScrubRate = 0 })
	admin := []string{"--admin", n.AdminAddr()}
	out, _, err := runCLI(t, "", append([]string{"scrub"}, admin...)...)
	if err != nil || !strings.Contains(out, "scrubber: off") {
		t.Fatalf("spool scrub: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "", append([]string{"scrub", "--start"}, admin...)...); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("spool scrub --start with the scrubber off: %v", err)
	}
}
