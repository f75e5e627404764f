package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

// baselineServerCommand starts the baseline's server processes. Tests
// replace it, as a test binary is not spool.
var baselineServerCommand = bench.SpoolServerCommand

func newBenchBaselineCmd() *cobra.Command {
	var (
		common benchCommon
		cfg    = bench.DefaultBaseline()
		only   string
	)
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "Measure this machine's limits: append, copy and round trip on loopback",
		Long: `Measure what this machine does with no broker in the way, each for --duration:

  append      --producers loopback TCP connections each send Produce
              requests of one batch of --batch-records records of
              --record-size bytes, as 'spool bench produce --raw' sends
              them; the server takes the batch from the request, write(2)s
              it to one file (O_APPEND, fsync with --fsync; a new file, the
              old one deleted, past --roll-bytes) and sends back a fixed
              Produce response; the next batch goes when the answer is back.
  append-rtt  the same with one connection and batches of one record: the
              round trip of an append, one in flight; the baseline for a
              produce's latency at acks=1.
  copy        a --copy-bytes file, read once into the page cache, is copied
              to a loopback socket with sendfile(2) over and over; the client
              reads into a --read-bytes buffer and drops it. Its CPU per GB
              is the sender's.
  rtt         one connection sends a Produce request of one --rtt-bytes
              record and waits for the answer, one at a time: the bare round
              trip, nothing written.

The client is the raw produce client of 'spool bench produce --raw', so a
ratio of that bench to this one has the same client cost on both sides
(on a small machine, a client's own CPU and wake-ups are much of a round
trip's tail). The servers run in a process of their own (this binary,
re-executed), so each figure is measured as a broker is: a client process
and a server process on loopback. Within one process a round trip is
markedly cheaper, as one Go runtime both sends and answers without either
side being woken from epoll by the other, which would flatter the
baseline. The server's CPU time is read from /proc.

Run it with the same record size, batch size and producers as the produce
bench, and on the same file system as the broker's data (--dir).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := common.start(cmd)
			if err != nil {
				return err
			}
			cfg.Run, cfg.ServerCommand, cfg.Only = run, baselineServerCommand, nil
			for _, name := range strings.Split(only, ",") {
				cfg.Only = append(cfg.Only, strings.TrimSpace(name))
			}
			rep, err := bench.Baseline(cmd.Context(), cfg)
			return common.print(cmd, rep, err)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 5*time.Second)
	fs.StringVar(&cfg.Dir, "dir", cfg.Dir, "directory for the append and copy files (use the broker's file system)")
	fs.IntVar(&cfg.RecordSize, "record-size", cfg.RecordSize, "bytes per record")
	fs.IntVar(&cfg.BatchRecords, "batch-records", cfg.BatchRecords, "records per appended batch (append; append-rtt sends one)")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "concurrent appending connections (append; append-rtt has one)")
	fs.BoolVar(&cfg.Fsync, "fsync", cfg.Fsync, "fsync after every appended batch")
	fs.Int64Var(&cfg.CopyBytes, "copy-bytes", cfg.CopyBytes, "size of the file copied to the socket")
	fs.IntVar(&cfg.ReadBytes, "read-bytes", cfg.ReadBytes, "the copy client's read buffer")
	fs.IntVar(&cfg.RTTBytes, "rtt-bytes", 0, "bytes of the record sent per round trip (0: --record-size)")
	fs.Int64Var(&cfg.RollBytes, "roll-bytes", cfg.RollBytes, "start a new append file (deleting the old) past this size, as a log rolls segments")
	fs.StringVar(&only, "only", strings.Join(bench.BaselineMeasurements, ","), "which measurements to run, in order")
	return cmd
}
