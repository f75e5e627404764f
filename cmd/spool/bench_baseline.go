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
		Short: "Measure this machine's limits: append, copy, round trip and replication on loopback",
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
  replicated  as append, to a leader process that write(2)s each batch to
              its file and forwards it over TCP to two follower processes,
              who write it and answer; the leader answers once one of them
              has (a majority of three). With --fsync the leader and each
              follower fdatasync before answering, one sync for all the
              batches that arrived meanwhile (group commit), as a node's
              --raft-fsync does. No protocol, no Raft, no Kafka framing
              between the three: the limit of acks=all with three replicas
              on this machine. Its CPU figure is the three processes'.
  replicated-rtt  the same with one connection and batches of one record:
              the round trip of a replicated append, one in flight; the
              baseline for a produce's latency at acks=all.

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
	fs.IntVar(&cfg.BatchRecords, "batch-records", cfg.BatchRecords, "records per appended batch (append, replicated; the -rtt ones send one)")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "concurrent appending connections (append, replicated; the -rtt ones have one)")
	fs.BoolVar(&cfg.Fsync, "fsync", cfg.Fsync, "fsync after every appended batch (replicated: fdatasync, group commit, on the leader and each follower before answering)")
	fs.Int64Var(&cfg.CopyBytes, "copy-bytes", cfg.CopyBytes, "size of the file copied to the socket")
	fs.IntVar(&cfg.ReadBytes, "read-bytes", cfg.ReadBytes, "the copy client's read buffer")
	fs.IntVar(&cfg.RTTBytes, "rtt-bytes", 0, "bytes of the record sent per round trip (0: --record-size)")
	fs.Int64Var(&cfg.RollBytes, "roll-bytes", cfg.RollBytes, "start a new append file (deleting the old) past this size, as a log rolls segments")
	fs.StringVar(&only, "only", strings.Join(bench.BaselineMeasurements, ","), "which measurements to run, in order")
	return cmd
}
