package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// baselineLoad describes what `spool bench baseline` measures.
type baselineLoad struct {
	dir          string
	recordSize   int
	batchRecords int
	producers    int
	fsync        bool
	copyBytes    int64
	readBytes    int
	rttBytes     int
	rollBytes    int64
	only         string
}

// baselineFrameMax bounds a baseline frame; both ends are ours, but a
// stray connection to the loopback port must not make us allocate.
const baselineFrameMax = 256 << 20

func newBenchBaselineCmd() *cobra.Command {
	var (
		common benchCommon
		l      baselineLoad
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
			if err := common.validate(); err != nil {
				return err
			}
			if common.duration == 0 {
				return errors.New("baseline runs for --duration; --count alone is not enough")
			}
			if err := l.validate(); err != nil {
				return err
			}
			dir, err := os.MkdirTemp(l.dir, "spool-baseline-")
			if err != nil {
				return fmt.Errorf("baseline dir: %w", err)
			}
			defer os.RemoveAll(dir)

			rep := benchReport{Command: "baseline", Settings: map[string]any{
				"record_size": l.recordSize, "batch_records": l.batchRecords, "producers": l.producers,
				"fsync": l.fsync, "copy_bytes": l.copyBytes, "read_bytes": l.readBytes,
				"rtt_bytes": l.rttBytes, "duration": common.duration.String(), "dir": l.dir,
				"roll_bytes": l.rollBytes,
			}}
			ctx := cmd.Context()
			for _, name := range l.measurements() {
				var (
					res benchResult
					err error
				)
				switch name {
				case "append":
					res, err = l.runAppend(ctx, name, l.producers, l.batchRecords, dir, &common, cmd.ErrOrStderr())
				case "append-rtt":
					res, err = l.runAppend(ctx, name, 1, 1, dir, &common, cmd.ErrOrStderr())
				case "copy":
					res, err = l.runCopy(ctx, dir, &common, cmd.ErrOrStderr())
				case "rtt":
					res, err = l.runRTT(ctx, &common, cmd.ErrOrStderr())
				}
				if err != nil {
					return fmt.Errorf("baseline %s: %w", name, err)
				}
				rep.Results = append(rep.Results, res)
			}
			return rep.print(cmd.OutOrStdout(), common.output)
		},
	}
	fs := cmd.Flags()
	common.register(fs, 5*time.Second)
	fs.StringVar(&l.dir, "dir", os.TempDir(), "directory for the append and copy files (use the broker's file system)")
	fs.IntVar(&l.recordSize, "record-size", 1024, "bytes per record")
	fs.IntVar(&l.batchRecords, "batch-records", 16, "records per appended batch (append; append-rtt sends one)")
	fs.IntVar(&l.producers, "producers", 1, "concurrent appending connections (append; append-rtt has one)")
	fs.BoolVar(&l.fsync, "fsync", false, "fsync after every appended batch")
	fs.Int64Var(&l.copyBytes, "copy-bytes", 256<<20, "size of the file copied to the socket")
	fs.IntVar(&l.readBytes, "read-bytes", 1<<20, "the copy client's read buffer")
	fs.IntVar(&l.rttBytes, "rtt-bytes", 0, "bytes of the record sent per round trip (0: --record-size)")
	fs.Int64Var(&l.rollBytes, "roll-bytes", 1<<30, "start a new append file (deleting the old) past this size, as a log rolls segments")
	fs.StringVar(&l.only, "only", strings.Join(baselineMeasurements, ","), "which measurements to run, in order")
	return cmd
}

// baselineMeasurements are what --only may name, in the default order.
var baselineMeasurements = []string{"append", "append-rtt", "copy", "rtt"}

// measurements is --only as a list, each name known (checked by validate).
func (l *baselineLoad) measurements() []string {
	var names []string
	for _, name := range strings.Split(l.only, ",") {
		names = append(names, strings.TrimSpace(name))
	}
	return names
}

func (l *baselineLoad) validate() error {
	if l.rttBytes == 0 {
		l.rttBytes = l.recordSize
	}
	for _, name := range l.measurements() {
		if !slices.Contains(baselineMeasurements, name) {
			return fmt.Errorf("--only %q: want a list of %s", l.only, strings.Join(baselineMeasurements, ", "))
		}
	}
	switch {
	case l.recordSize < 1 || l.recordSize > maxBenchRecordSize:
		return fmt.Errorf("--record-size %d: want 1..%d", l.recordSize, maxBenchRecordSize)
	case l.batchRecords < 1 || encodedBatchBytes(l.batchRecords, l.recordSize) > baselineFrameMax/2:
		return fmt.Errorf("--batch-records %d: want >= 1 and a batch of at most %d bytes", l.batchRecords, baselineFrameMax/2)
	case l.producers < 1 || l.producers > maxBenchProducers:
		return fmt.Errorf("--producers %d: want 1..%d", l.producers, maxBenchProducers)
	case l.copyBytes < 1<<20 || l.copyBytes > 64<<30:
		return fmt.Errorf("--copy-bytes %d: want 1 MiB..64 GiB", l.copyBytes)
	case l.readBytes < 1 || l.readBytes > baselineFrameMax:
		return fmt.Errorf("--read-bytes %d: want 1..%d", l.readBytes, baselineFrameMax)
	case l.rttBytes < 1 || encodedBatchBytes(1, l.rttBytes) > baselineFrameMax/2:
		return fmt.Errorf("--rtt-bytes %d: want 1..%d", l.rttBytes, baselineFrameMax/2-encodedBatchBytes(1, 0))
	case l.rollBytes < 1<<20:
		return fmt.Errorf("--roll-bytes %d: want at least 1 MiB", l.rollBytes)
	}
	return nil
}

// runAppend measures name: conns connections appending batches of
// batchRecords records through an append server process.
func (l *baselineLoad) runAppend(ctx context.Context, name string, conns, batchRecords int, dir string, c *benchCommon, progress io.Writer) (benchResult, error) {
	files, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return benchResult{}, err
	}
	defer os.RemoveAll(files)
	value := randomPayload(l.recordSize)
	batch := rawRecordBatch(batchRecords, value, time.Now().UnixMilli())
	args := []string{"--dir", files, "--roll-bytes", strconv.FormatInt(l.rollBytes, 10), "--batch-bytes", strconv.Itoa(len(batch))}
	if l.fsync {
		args = append(args, "--fsync")
	}
	srv, err := startBaselineServer("append", args...)
	if err != nil {
		return benchResult{}, err
	}
	m := newMeter(name)
	res, serverCPU, err := l.drive(ctx, srv, m, conns, batch, int64(batchRecords), int64(batchRecords*len(value)), c, progress)
	res.Extra = map[string]float64{"bytes_per_batch": float64(len(batch)), "records_per_batch": float64(batchRecords)}
	if gb := float64(res.Bytes) / 1e9; gb > 0 {
		res.Extra["server_cpu_seconds_per_gb"] = serverCPU.Seconds() / gb
	}
	return res, err
}

func (l *baselineLoad) runRTT(ctx context.Context, c *benchCommon, progress io.Writer) (benchResult, error) {
	value := randomPayload(l.rttBytes)
	batch := rawRecordBatch(1, value, time.Now().UnixMilli())
	srv, err := startBaselineServer("rtt", "--batch-bytes", strconv.Itoa(len(batch)))
	if err != nil {
		return benchResult{}, err
	}
	res, _, err := l.drive(ctx, srv, newMeter("rtt"), 1, batch, 1, int64(len(value)), c, progress)
	if res.Latency != nil {
		res.Latency.What = "round trip"
	}
	return res, err
}

// drive sends Produce requests of batch, with the raw produce client, over
// conns connections to the server process, one in flight on each, until
// the run ends; then it stops the server and returns the result and the
// CPU time the server used while measured. records and bytes are what
// each acknowledged batch counts.
func (l *baselineLoad) drive(ctx context.Context, srv *baselineProcess, m *meter, conns int, batch []byte, records, bytes int64, c *benchCommon, progress io.Writer) (benchResult, time.Duration, error) {
	producers, err := dialBaseline(ctx, srv.addr, conns, batch, records, bytes)
	if err != nil {
		return benchResult{}, 0, errors.Join(err, srv.stop())
	}
	defer func() {
		for _, p := range producers {
			p.c.nc.Close()
		}
	}()
	cpuBefore, err := srv.cpu()
	if err != nil {
		return benchResult{}, 0, errors.Join(err, srv.stop())
	}
	rctx, cancel := c.context(ctx)
	defer cancel()
	m.start = time.Now()
	stop := m.progress(progress, c.quiet)
	err = runRawProducers(rctx, producers, 1, c.count, m)
	elapsed := time.Since(m.start)
	stop()
	cpuAfter, cerr := srv.cpu()
	if err == nil {
		err = cerr
	}
	if serr := srv.stop(); serr != nil {
		err = errors.Join(err, serr) // the server's error says why the client's failed
	}
	return m.result(elapsed, "batch round trip"), cpuAfter - cpuBefore, err
}

// dialBaseline connects conns raw producers of batch to a baseline server.
func dialBaseline(ctx context.Context, addr string, conns int, batch []byte, records, bytes int64) ([]*rawProducer, error) {
	var producers []*rawProducer
	for i := 0; i < conns; i++ {
		c, err := dialRawKafka(ctx, addr)
		if err == nil {
			var p *rawProducer
			if p, err = newRawProducer(c, "baseline", 0, 1, batch, records, bytes); err == nil {
				producers = append(producers, p)
				continue
			}
			c.nc.Close()
		}
		for _, p := range producers {
			p.c.nc.Close()
		}
		return nil, err
	}
	return producers, nil
}

// runCopy reads what a copy server process sends with sendfile(2) from a
// cached file, until the run ends.
func (l *baselineLoad) runCopy(ctx context.Context, dir string, c *benchCommon, progress io.Writer) (benchResult, error) {
	srv, err := startBaselineServer("copy", "--dir", dir, "--copy-bytes", strconv.FormatInt(l.copyBytes, 10))
	if err != nil {
		return benchResult{}, err
	}
	conn, err := net.Dial("tcp", srv.addr)
	if err != nil {
		return benchResult{}, errors.Join(err, srv.stop())
	}
	defer conn.Close()
	serverBefore, err := srv.cpu()
	if err != nil {
		return benchResult{}, errors.Join(err, srv.stop())
	}
	m := newMeter("copy")
	rctx, cancel := c.context(ctx)
	defer cancel()
	buf := make([]byte, l.readBytes)
	if d, ok := rctx.Deadline(); ok {
		conn.SetReadDeadline(d.Add(30 * time.Second)) // a stalled server ends the run with an error
	}
	clientBefore := cpuTime()
	m.start = time.Now()
	stop := m.progress(progress, c.quiet)
	var readErr error
	for rctx.Err() == nil {
		n, err := conn.Read(buf)
		m.add(0, int64(n))
		if err != nil {
			readErr = fmt.Errorf("read from the copy server: %w", err)
			break
		}
	}
	elapsed := time.Since(m.start)
	clientCPU := cpuTime() - clientBefore
	serverAfter, cerr := srv.cpu()
	stop()
	conn.Close()
	if serr := srv.stop(); serr != nil {
		readErr = errors.Join(readErr, serr)
	}
	if readErr == nil {
		readErr = cerr
	}
	res := m.result(elapsed, "")
	// Records as many --record-size records as the bytes would hold, so
	// records/s compares with consume's.
	res.Records = res.Bytes / int64(l.recordSize)
	res.RecordsPerSec = float64(res.Records) / elapsed.Seconds()
	if gb := float64(res.Bytes) / 1e9; gb > 0 {
		res.Extra = map[string]float64{
			"cpu_seconds_per_gb":        (serverAfter - serverBefore).Seconds() / gb,
			"client_cpu_seconds_per_gb": clientCPU.Seconds() / gb,
		}
	}
	return res, readErr
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
