package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestConsumeFromPositions(t *testing.T) {
	n := testNode(t)
	b := []string{"--brokers", n.KafkaAddr()}
	if _, _, err := runCLI(t, "", append([]string{"topic", "create", "pos", "-p", "1"}, b...)...); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.DefaultProduceTopic("pos"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := 0; i < 5; i++ {
		r := &kgo.Record{Value: []byte(fmt.Sprint("m", i)), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(args ...string) string {
		t.Helper()
		out, _, err := runCLI(t, "", append(append([]string{"consume", "pos"}, args...), b...)...)
		if err != nil {
			t.Fatalf("consume %v: %v", args, err)
		}
		return out
	}
	if got := consume(); got != "m0\nm1\nm2\nm3\nm4\n" {
		t.Fatalf("from beginning: %q", got)
	}
	if got := consume("--from", "3"); got != "m3\nm4\n" {
		t.Fatalf("from offset 3: %q", got)
	}
	if got := consume("-n", "2"); got != "m0\nm1\n" {
		t.Fatalf("-n 2: %q", got)
	}
	if got := consume("--from", "end"); got != "" {
		t.Fatalf("from end: %q", got)
	}
	at := base.Add(90 * time.Second).Format(time.RFC3339)
	if got := consume("--from", "time:"+at); got != "m2\nm3\nm4\n" {
		t.Fatalf("from time %s: %q", at, got)
	}
	if _, _, err := runCLI(t, "", append([]string{"consume", "pos", "--from", "yesterday"}, b...)...); err == nil {
		t.Fatal("--from yesterday accepted")
	}

	// --follow waits for new records.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		out, _, _ := runCLIContext(ctx, "", append([]string{"consume", "pos", "--from", "end", "--follow", "-n", "1"}, b...)...)
		done <- out
	}()
	// Keep producing until the follower, which may start after the first
	// record, has printed one.
	var out string
	retry.Run(t, 30*time.Second, func() error {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("new")}).FirstErr(); err != nil {
			return err
		}
		select {
		case out = <-done:
			return nil
		default:
			return errors.New("the follower has printed nothing yet")
		}
	})
	if strings.TrimSpace(out) != "new" {
		t.Fatalf("follow printed %q", out)
	}
}
