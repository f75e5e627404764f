package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

func newBenchE2ECmd(g *globals) *cobra.Command {
	var (
		common benchCommon
		cfg    bench.EndToEndConfig
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
			run, err := common.start(cmd)
			if err != nil {
				return err
			}
			cfg.Cluster, cfg.Run = g.cluster(), run
			rep, err := bench.EndToEnd(cmd.Context(), cfg)
			return common.print(cmd, rep, err)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 10*time.Second)
	registerProduceLoad(fs, &cfg.Load)
	registerFetchLoad(fs, &cfg.Fetch)
	fs.Lookup("max-wait").DefValue = "10ms"
	cfg.Fetch.MaxWait = 10 * time.Millisecond
	fs.DurationVar(&cfg.Drain, "drain", 10*time.Second, "how long the consumer may trail the producers once they stop")
	return cmd
}
