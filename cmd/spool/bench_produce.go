package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

func newBenchProduceCmd(g *globals) *cobra.Command {
	var (
		common benchCommon
		cfg    bench.ProduceConfig
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce records as fast as the cluster takes them",
		Long: `Produce records of --record-size random bytes from --producers clients until
--duration or --count, and report records/s, MB/s and the latency from
handing a record to the client to its acknowledgement (p50, p99, p99.9).
With --buffered 1 each producer has one record, hence one request, in flight.

With --raw there is no client library: --producers TCP connections each send
one pre-encoded ProduceRequest over and over (connection i to partition i
modulo the partitions), a RecordBatch of --batch-records records, with
--max-inflight requests outstanding, and the latency is each request's round
trip. That is the load shape of 'spool bench baseline' (fixed batches behind
loopback round trips), so the ratio of the two measures the broker and not
the client's own record building.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := common.start(cmd)
			if err != nil {
				return err
			}
			cfg.Cluster, cfg.Run = g.cluster(), run
			rep, err := bench.Produce(cmd.Context(), cfg)
			return common.print(cmd, rep, err)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 10*time.Second)
	registerProduceLoad(fs, &cfg.Load)
	fs.BoolVar(&cfg.Raw, "raw", false, "send pre-encoded ProduceRequests on plain connections instead of using franz-go (see above)")
	fs.IntVar(&cfg.BatchRecords, "batch-records", 0, "with --raw, records per batch (0: as many as fit in --batch-bytes)")
	return cmd
}
