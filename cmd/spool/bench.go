package main

// `spool bench` measures a running cluster (produce, consume, e2e) and this
// machine's own limits (baseline); the load generator is package bench, and
// these commands map flags onto its configs and print its reports.

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/bench"
)

// benchExtraCommands lets build-tagged files (bench_kfake.go) add
// subcommands without touching the default binary.
var benchExtraCommands []func(g *globals) *cobra.Command

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency of a cluster, and this machine's limits",
		Long: `Measure a running cluster with franz-go (produce, consume, e2e) and this
machine's own limits (baseline). Each prints a live progress line on stderr
once a second and a summary with records/s, MB/s and latency percentiles;
-o json prints the summary as JSON on stdout for scripts.

Read the figures as ratios: run 'spool bench baseline' in the same session
and divide (scripts/bench-compare.sh does the whole comparison).`,
	}
	cmd.AddCommand(newBenchProduceCmd(g), newBenchConsumeCmd(g), newBenchE2ECmd(g), newBenchBaselineCmd(), newBenchBaselineServerCmd())
	for _, extra := range benchExtraCommands {
		cmd.AddCommand(extra(g))
	}
	return cmd
}

// benchCommon are the flags every bench subcommand shares.
type benchCommon struct {
	run    bench.Run
	output string
}

func (c *benchCommon) register(fs *pflag.FlagSet, defaultDuration time.Duration) {
	fs.DurationVar(&c.run.Duration, "duration", defaultDuration, "how long to run (with --count, whichever ends first; 0 means no limit)")
	fs.Int64Var(&c.run.Count, "count", 0, "stop after this many records (0: run for --duration)")
	fs.StringVarP(&c.output, "output", "o", "text", "summary format: text or json")
	fs.BoolVarP(&c.run.Quiet, "quiet", "q", false, "no progress line on stderr")
}

// start checks the flags only the command reads and returns the run, its
// progress going to the command's stderr.
func (c *benchCommon) start(cmd *cobra.Command) (bench.Run, error) {
	if c.output != "text" && c.output != "json" {
		return bench.Run{}, fmt.Errorf("output %q: want text or json", c.output)
	}
	run := c.run
	run.Log = cmd.ErrOrStderr()
	return run, nil
}

// print prints a run's report, or returns its error.
func (c *benchCommon) print(cmd *cobra.Command, rep bench.Report, err error) error {
	if err != nil {
		return err
	}
	return rep.Print(cmd.OutOrStdout(), c.output)
}

// cluster is where the bench commands connect: the --brokers, through the
// client that says what to do when no node answers.
func (g *globals) cluster() bench.Cluster {
	return bench.Cluster{Brokers: g.Seeds(), Client: g.Kafka}
}

// registerProduceLoad adds the flags of the load produce and e2e generate
// (and consume's --fill).
func registerProduceLoad(fs *pflag.FlagSet, l *bench.ProduceLoad) {
	*l = bench.DefaultProduceLoad()
	fs.StringVar(&l.Topic, "topic", l.Topic, "topic to write (created with --partitions if missing)")
	fs.Int32Var(&l.Partitions, "partitions", l.Partitions, "partitions of the topic when it has to be created")
	fs.IntVar(&l.RecordSize, "record-size", l.RecordSize, "bytes of each record's value")
	fs.IntVar(&l.Producers, "producers", l.Producers, "concurrent producers, each its own client and connection")
	fs.StringVar(&l.Acks, "acks", l.Acks, "acks: 0, 1 or all")
	fs.Int32Var(&l.BatchBytes, "batch-bytes", l.BatchBytes, "largest record batch a producer builds (ProducerBatchMaxBytes)")
	fs.DurationVar(&l.Linger, "linger", l.Linger, "how long a producer waits to fill a batch (ProducerLinger)")
	fs.IntVar(&l.Buffered, "buffered", l.Buffered, "records a producer may have outstanding; 1 means one record at a time")
	fs.IntVar(&l.MaxInflight, "max-inflight", l.MaxInflight, "produce requests in flight per producer and broker")
	fs.StringVar(&l.Compression, "compression", l.Compression, "batch compression: none, gzip, snappy, lz4 or zstd")
}

// registerFetchLoad adds the flags of how consume and e2e fetch.
func registerFetchLoad(fs *pflag.FlagSet, f *bench.FetchLoad) {
	*f = bench.DefaultFetchLoad()
	fs.Int32Var(&f.FetchMaxBytes, "fetch-max-bytes", f.FetchMaxBytes, "most bytes one Fetch response may carry (FetchMaxBytes)")
	fs.Int32Var(&f.PartitionMaxBytes, "partition-max-bytes", f.PartitionMaxBytes, "most bytes per partition in one Fetch (FetchMaxPartitionBytes)")
	fs.DurationVar(&f.MaxWait, "max-wait", f.MaxWait, "how long a Fetch waits for data (FetchMaxWait)")
}
