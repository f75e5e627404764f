package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLineBytes bounds one input line (one record).
const maxLineBytes = 16 << 20

func newProduceCmd(g *globals) *cobra.Command {
	var (
		keySep    string
		partition int32
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of stdin",
		Long: `Produce one record per line of standard input. With --key-separator, the text
before the first separator is the key and the rest the value. With --partition,
every record goes to that partition; otherwise keyed records are hashed and
unkeyed ones spread.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			opts := []kgo.Opt{kgo.DefaultProduceTopic(topic)}
			if partition >= 0 {
				opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			}
			ctx := cmd.Context()
			cl, err := g.client(ctx, opts...)
			if err != nil {
				return err
			}
			defer cl.Close()

			var (
				mu       sync.Mutex
				firstErr error
				count    int
			)
			done := func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					count++
				}
			}
			sc := bufio.NewScanner(cmd.InOrStdin())
			sc.Buffer(make([]byte, 64<<10), maxLineBytes)
			for sc.Scan() {
				line := sc.Text()
				r := &kgo.Record{Value: []byte(line), Partition: partition}
				if keySep != "" {
					if k, v, ok := strings.Cut(line, keySep); ok {
						r.Key, r.Value = []byte(k), []byte(v)
					}
				}
				cl.Produce(ctx, r, done)
			}
			if err := sc.Err(); err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			fctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if err := cl.Flush(fctx); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if firstErr != nil {
				return fmt.Errorf("produce to %s: %w (%d records written)", topic, firstErr, count)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "produced %d records to %s\n", count, topic)
			return nil
		},
	}
	cmd.Flags().StringVar(&keySep, "key-separator", "", "split each line into key and value at the first occurrence of this string")
	cmd.Flags().Int32Var(&partition, "partition", -1, "send every record to this partition (-1: let the partitioner choose)")
	return cmd
}
