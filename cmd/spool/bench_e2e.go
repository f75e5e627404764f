package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eStampBytes is the send time, in nanoseconds since the run began, that
// starts every e2e record's value.
const e2eStampBytes = 8

func newBenchE2ECmd(g *globals) *cobra.Command {
	var (
		common benchCommon
		load   produceLoad
		fetch  fetchLoad
		drain  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "e2e",
		Short: "Produce and consume at once; measure the time from send to receipt",
		Long: `Produce as 'spool bench produce' does while one consumer reads the same topic
from the end offsets it listed before the first record, and report the
consumer's records/s and MB/s and each record's latency from being handed to
the producer to being returned by the consumer's poll. Every value starts with
its 8-byte send time, so --record-size is at least 8.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := common.validate(); err != nil {
				return err
			}
			if err := load.validate(); err != nil {
				return err
			}
			if err := fetch.validate(); err != nil {
				return err
			}
			if load.recordSize < e2eStampBytes {
				return fmt.Errorf("--record-size %d: e2e needs at least %d bytes for the send time", load.recordSize, e2eStampBytes)
			}
			ctx := cmd.Context()
			if err := ensureTopic(ctx, g, load.topic, load.partitions); err != nil {
				return err
			}
			_, end, err := topicOffsets(ctx, g, load.topic)
			if err != nil {
				return err
			}
			consumed := newMeter("e2e")
			produced := newMeter("produce")
			cl, err := g.client(ctx, append(fetch.opts(), kgo.ConsumePartitions(exactOffsets(load.topic, end)))...)
			if err != nil {
				return err
			}
			defer cl.Close()

			payload := randomPayload(load.recordSize)
			begin := time.Now()
			consumed.start, produced.start = begin, begin
			stop := consumed.progress(cmd.ErrOrStderr(), common.quiet)

			// The consumer runs until it has every acknowledged record,
			// or --drain after the producers stop.
			cctx, cancelConsume := context.WithCancel(ctx)
			defer cancelConsume()
			consumeErr := make(chan error, 1)
			go func() {
				consumeErr <- consumeInto(cctx, cl, consumed, 1<<62, func(r *kgo.Record) {
					if len(r.Value) >= e2eStampBytes {
						sent := begin.Add(time.Duration(binary.BigEndian.Uint64(r.Value)))
						consumed.latency.record(time.Since(sent))
					}
				}, nil)
			}()

			pctx, cancelProduce := common.context(ctx)
			defer cancelProduce()
			perr := runProducers(pctx, g, &load, produced, &batchStats{}, common.count, func() []byte {
				v := make([]byte, len(payload))
				copy(v, payload)
				binary.BigEndian.PutUint64(v, uint64(time.Since(begin)))
				return v
			})
			want := produced.records.Load()
			deadline := time.Now().Add(drain)
			var cerr error
		wait:
			for consumed.records.Load() < want {
				select {
				case cerr = <-consumeErr:
					break wait
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					break
				}
			}
			elapsed := time.Since(begin)
			cancelConsume()
			stop()
			if perr != nil {
				return perr
			}
			if cerr != nil && !errors.Is(cerr, context.Canceled) {
				return cerr
			}
			res := consumed.result(elapsed, "send to receipt")
			if missing := want - consumed.records.Load(); missing > 0 {
				res.Errors += missing
				fmt.Fprintf(cmd.ErrOrStderr(), "e2e: %d acknowledged records not consumed within --drain %v\n", missing, drain)
			}
			res.Extra = map[string]float64{"produced": float64(want)}
			if l := produced.latency.summary(""); l.Samples > 0 {
				res.Extra["produce_p99_ms"] = l.P99
			}
			settings := load.settings()
			settings["duration"], settings["count"] = common.duration.String(), common.count
			settings["max_wait"] = fetch.maxWait.String()
			rep := benchReport{Command: "e2e", Settings: settings, Results: []benchResult{res}}
			return rep.print(cmd.OutOrStdout(), common.output)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 10*time.Second)
	load.register(fs)
	fetch.register(fs)
	fs.Lookup("max-wait").DefValue = "10ms"
	fetch.maxWait = 10 * time.Millisecond
	fs.DurationVar(&drain, "drain", 10*time.Second, "how long the consumer may trail the producers once they stop")
	return cmd
}
