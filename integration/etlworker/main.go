// Command etlworker is a consume-transform-produce worker for the
// integration tests (../txn_etl_test.go): a franz-go GroupTransactSession
// that copies every record of one topic to another, one transaction per
// poll, committing the consumed offsets in the transaction. The test kills
// it with SIGKILL mid-stream. It runs until killed; on an error it logs it
// on stderr and starts a new session.
//
//	etlworker BROKERS TRANSACTIONAL-ID GROUP IN OUT
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: etlworker BROKERS TRANSACTIONAL-ID GROUP IN OUT")
		os.Exit(2)
	}
	brokers, id, group, in, out := strings.Split(os.Args[1], ","), os.Args[2], os.Args[3], os.Args[4], os.Args[5]
	for {
		if err := run(brokers, id, group, in, out); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v; new session\n", id, err)
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func run(brokers []string, id, group, in, out string) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(6*time.Second),
		kgo.RetryTimeout(60*time.Second),
		kgo.RequestRetries(100),
	)
	if err != nil {
		return err
	}
	defer sess.Close()
	ctx := context.Background()
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := sess.PollRecords(pctx, 200)
		cancel()
		if err := fs.Err0(); err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			continue
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(os.Stderr, "%s: fetch %s/%d: %v\n", id, t, p, err)
		})
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := fmt.Sprintf("%s@%d/%d", id, r.Partition, r.Offset)
			sess.Produce(ctx, &kgo.Record{Topic: out, Key: append([]byte(nil), r.Key...), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil && !errors.Is(err, kgo.ErrAborting) {
					fmt.Fprintf(os.Stderr, "%s: produce: %v\n", id, err)
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			return fmt.Errorf("end: %w", err)
		}
		if !committed {
			fmt.Fprintf(os.Stderr, "%s: transaction of %d records aborted (rebalance or fencing)\n", id, fs.NumRecords())
		}
	}
}
