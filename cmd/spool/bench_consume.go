package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

func newBenchConsumeCmd(g *globals) *cobra.Command {
	var (
		common benchCommon
		cfg    bench.ConsumeConfig
	)
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume a topic from its start as fast as the cluster serves it",
		Long: `Consume --topic from its start offsets and report records/s, MB/s and the
round trip of each Fetch request (p50, p99, p99.9). By default it reads the
records present when it starts (up to the end offsets it lists first), once.
With --duration, or a --count beyond what is present, it reads them in
passes, as the copy baseline sends its file over and over: a partition that
reaches its end offset goes back to its start, until the duration ends or
--count records arrived. With --fill N it first produces records until the
topic holds at least N.

With --raw there is no client library: one connection per partition leader
sends Fetch requests built by hand, one in flight, and skips over each record
batch by its header without decoding a record, as the copy baseline's reader
drops what it reads. MB/s then counts record batch bytes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := common.start(cmd)
			if err != nil {
				return err
			}
			cfg.Cluster, cfg.Run = g.cluster(), run
			rep, err := bench.Consume(cmd.Context(), cfg)
			return common.print(cmd, rep, err)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 0)
	registerFetchLoad(fs, &cfg.Fetch)
	registerProduceLoad(fs, &cfg.Load) // --topic, and the produce flags for --fill
	fs.Int64Var(&cfg.Fill, "fill", 0, "first produce records (with the produce flags) until the topic holds at least this many")
	fs.BoolVar(&cfg.Raw, "raw", false, "fetch with hand-built requests and count batches by their headers instead of using franz-go (see above)")
	fs.MarkHidden("max-inflight")
	return cmd
}
