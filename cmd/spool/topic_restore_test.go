package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tier/tiertest"
)

// TestTopicRestore: a tiered topic's records are uploaded, its node goes
// with its disk, and `spool topic restore` on a new node pointed at the
// same store brings back every uploaded record from offset 0, in order;
// the next record produced follows them.
func TestTopicRestore(t *testing.T) {
	sw := tiertest.Start(t)
	store := sw.Store(t, "cli/")
	withStore := func(c *node.Config) {
		c.Tier = sw.Settings(t, "cli/")
		c.RetentionCheckInterval = 100 * time.Millisecond
	}
	first := testNode(t, withStore)
	if _, _, err := runCLI(t, "", "topic", "create", "orders", "-p", "1", "--brokers", first.KafkaAddr(),
		"-c", "remote.storage.enable=true", "-c", "local.retention.bytes=1", "-c", "segment.bytes=16384"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(first.KafkaAddr()), kgo.DefaultProduceTopic("orders"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 500)
	for i := range 300 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "r%04d-%s", i, pad)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	var uploaded int64
	retry.Run(t, 30*time.Second, func() error {
		rc, err := store.GetRange(context.Background(), "cli/orders/0/manifest", 0, -1)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		_, segs, err := tier.DecodeManifest(b)
		if err != nil || len(segs) < 5 {
			return fmt.Errorf("%d segments uploaded (%v)", len(segs), err)
		}
		uploaded = segs[len(segs)-1].Next
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	first.Shutdown(ctx) // its data dir is never seen again

	second := testNode(t, withStore)
	b := []string{"--brokers", second.KafkaAddr()}
	out, _, err := runCLI(t, "", append([]string{"topic", "restore", "orders", "-p", "1", "-c", "segment.bytes=16384"}, b...)...)
	if err != nil || !strings.Contains(out, "restoring orders (1 partition") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "", append([]string{"topic", "describe", "orders"}, b...)...)
	if err != nil || !strings.Contains(out, "remote.storage.recovery=true") || !strings.Contains(out, "REMOTE START") {
		t.Fatalf("describe after restore: %v\n%s", err, out)
	}
	// The remote and local starts and sizes, as describe shows them.
	retry.Run(t, 10*time.Second, func() error {
		out, _, err := runCLI(t, "", append([]string{"topic", "describe", "orders", "-o", "json"}, b...)...)
		if err != nil {
			return err
		}
		var ds client.DescribedTopics
		if err := json.Unmarshal([]byte(out), &ds); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		p := ds[0].Partitions[0]
		if !p.Tiered || p.RemoteStart == nil || *p.RemoteStart != 0 || p.LocalStart == nil || *p.LocalStart != uploaded ||
			p.RemoteBytes == nil || *p.RemoteBytes < 5*16384/2 || p.LocalBytes == nil {
			return fmt.Errorf("described %s", out)
		}
		return nil
	})
	cl, err = kgo.NewClient(kgo.SeedBrokers(second.KafkaAddr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}),
		kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r, err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("after")}).First()
	if err != nil || r.Offset != uploaded {
		t.Fatalf("first record after the restore at %d (%v), want %d", r.Offset, err, uploaded)
	}
	next := int64(0)
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	for next <= uploaded {
		fs := cl.PollFetches(fctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume at %d: %v", next, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			want := fmt.Sprintf("r%04d-", rec.Offset)
			if rec.Offset == uploaded {
				want = "after"
			}
			if rec.Offset != next || !strings.HasPrefix(string(rec.Value), want) {
				t.Fatalf("record at %d is %.10q, want offset %d %s", rec.Offset, rec.Value, next, want)
			}
			next++
		})
	}
}
