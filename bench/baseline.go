package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BaselineConfig is what Baseline measures. Each measurement runs for
// Run.Duration (Run.Count, if given, also ends the append and rtt runs):
//
//   - append: Producers loopback TCP connections each send Produce requests
//     of one batch of BatchRecords records of RecordSize bytes, as raw
//     Produce sends them; the server takes the batch from the request,
//     write(2)s it to one file (O_APPEND, fsync with Fsync; a new file, the
//     old one deleted, past RollBytes) and sends back a fixed Produce
//     response; the next batch goes when the answer is back.
//   - append-rtt: the same with one connection and batches of one record:
//     the round trip of an append, one in flight; the baseline for a
//     produce's latency at acks=1.
//   - copy: a CopyBytes file, read once into the page cache, is copied to a
//     loopback socket with sendfile(2) over and over; the client reads into
//     a ReadBytes buffer and drops it. Its CPU per GB is the sender's.
//   - rtt: one connection sends a Produce request of one RTTBytes record and
//     waits for the answer, one at a time: the bare round trip, nothing
//     written.
//   - replicated: as append, to a leader process that write(2)s each batch
//     to its file and forwards it over TCP to two follower processes, who
//     write it and answer; the leader answers once one of them has (a
//     majority of three). With Fsync, the leader and each follower
//     fdatasync before answering, one sync for all the batches that arrived
//     meanwhile (group commit), as a replicated partition's --raft-fsync
//     does. No protocol, no Raft, no Kafka framing between the three: the
//     limit of acks=all with three replicas on this machine.
//   - replicated-rtt: the same with one connection and batches of one
//     record: the round trip of a replicated append, one in flight.
//
// The client is raw Produce's, so a ratio of that bench to this one has the
// same client cost on both sides. The servers run in a process of their own
// (ServerCommand), so each figure is measured as a broker is: a client
// process and a server process on loopback. Within one process a round trip
// is markedly cheaper, as one Go runtime both sends and answers without
// either side being woken from epoll by the other, which would flatter the
// baseline. The server's CPU time is read from /proc.
type BaselineConfig struct {
	Run Run
	// Dir holds the append and copy files: use the broker's file system.
	Dir          string
	RecordSize   int
	BatchRecords int
	Producers    int
	Fsync        bool
	CopyBytes    int64
	ReadBytes    int
	// RTTBytes is the record sent per rtt round trip (0: RecordSize).
	RTTBytes  int
	RollBytes int64
	// Only lists the measurements to run, in order (nil: all of
	// BaselineMeasurements).
	Only []string
	// ServerCommand is the command line of a server process, which runs
	// ServeMain with args; nil: SpoolServerCommand.
	ServerCommand func(args ...string) (*exec.Cmd, error)
}

// BaselineMeasurements are what BaselineConfig.Only may name, in the
// default order.
var BaselineMeasurements = []string{"append", "append-rtt", "copy", "rtt", "replicated", "replicated-rtt"}

// DefaultBaseline is what `spool bench baseline` runs with no flags but
// --duration.
func DefaultBaseline() BaselineConfig {
	return BaselineConfig{
		Dir: os.TempDir(), RecordSize: 1024, BatchRecords: 16, Producers: 1,
		CopyBytes: 256 << 20, ReadBytes: 1 << 20, RollBytes: 1 << 30,
		Only: slices.Clone(BaselineMeasurements),
	}
}

// baselineFrameMax bounds a baseline frame; both ends are ours, but a
// stray connection to the loopback port must not make us allocate.
const baselineFrameMax = 256 << 20

// Baseline measures this machine's limits with no broker in the way: see
// BaselineConfig.
func Baseline(ctx context.Context, cfg BaselineConfig) (Report, error) {
	l := &cfg
	if err := l.Run.validate(true); err != nil {
		return Report{}, err
	}
	if l.Run.Duration == 0 {
		return Report{}, errors.New("baseline runs for --duration; --count alone is not enough")
	}
	if err := l.validate(); err != nil {
		return Report{}, err
	}
	dir, err := os.MkdirTemp(l.Dir, "spool-baseline-")
	if err != nil {
		return Report{}, fmt.Errorf("baseline dir: %w", err)
	}
	defer os.RemoveAll(dir)

	rep := Report{Command: "baseline", Settings: map[string]any{
		"record_size": l.RecordSize, "batch_records": l.BatchRecords, "producers": l.Producers,
		"fsync": l.Fsync, "copy_bytes": l.CopyBytes, "read_bytes": l.ReadBytes,
		"rtt_bytes": l.RTTBytes, "duration": l.Run.Duration.String(), "dir": l.Dir,
		"roll_bytes": l.RollBytes,
	}}
	for _, name := range l.Only {
		var (
			res Result
			err error
		)
		switch name {
		case "append":
			res, err = l.runAppend(ctx, name, l.Producers, l.BatchRecords, dir)
		case "append-rtt":
			res, err = l.runAppend(ctx, name, 1, 1, dir)
		case "copy":
			res, err = l.runCopy(ctx, dir)
		case "rtt":
			res, err = l.runRTT(ctx)
		case "replicated":
			res, err = l.runReplicated(ctx, name, l.Producers, l.BatchRecords, dir)
		case "replicated-rtt":
			res, err = l.runReplicated(ctx, name, 1, 1, dir)
		}
		if err != nil {
			return Report{}, fmt.Errorf("baseline %s: %w", name, err)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

func (l *BaselineConfig) validate() error {
	if l.RTTBytes == 0 {
		l.RTTBytes = l.RecordSize
	}
	if l.Only == nil {
		l.Only = slices.Clone(BaselineMeasurements)
	}
	for _, name := range l.Only {
		if !slices.Contains(BaselineMeasurements, name) {
			return fmt.Errorf("--only %q: want a list of %s", strings.Join(l.Only, ","), strings.Join(BaselineMeasurements, ", "))
		}
	}
	switch {
	case l.RecordSize < 1 || l.RecordSize > maxRecordSize:
		return fmt.Errorf("--record-size %d: want 1..%d", l.RecordSize, maxRecordSize)
	case l.BatchRecords < 1 || encodedBatchBytes(l.BatchRecords, l.RecordSize) > baselineFrameMax/2:
		return fmt.Errorf("--batch-records %d: want >= 1 and a batch of at most %d bytes", l.BatchRecords, baselineFrameMax/2)
	case l.Producers < 1 || l.Producers > maxProducers:
		return fmt.Errorf("--producers %d: want 1..%d", l.Producers, maxProducers)
	case l.CopyBytes < 1<<20 || l.CopyBytes > 64<<30:
		return fmt.Errorf("--copy-bytes %d: want 1 MiB..64 GiB", l.CopyBytes)
	case l.ReadBytes < 1 || l.ReadBytes > baselineFrameMax:
		return fmt.Errorf("--read-bytes %d: want 1..%d", l.ReadBytes, baselineFrameMax)
	case l.RTTBytes < 1 || encodedBatchBytes(1, l.RTTBytes) > baselineFrameMax/2:
		return fmt.Errorf("--rtt-bytes %d: want 1..%d", l.RTTBytes, baselineFrameMax/2-encodedBatchBytes(1, 0))
	case l.RollBytes < 1<<20:
		return fmt.Errorf("--roll-bytes %d: want at least 1 MiB", l.RollBytes)
	}
	return nil
}

// runAppend measures name: conns connections appending batches of
// batchRecords records through an append server process.
func (l *BaselineConfig) runAppend(ctx context.Context, name string, conns, batchRecords int, dir string) (Result, error) {
	files, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(files)
	value := randomPayload(l.RecordSize)
	batch := rawRecordBatch(batchRecords, value, time.Now().UnixMilli())
	args := []string{"--dir", files, "--roll-bytes", strconv.FormatInt(l.RollBytes, 10), "--batch-bytes", strconv.Itoa(len(batch))}
	if l.Fsync {
		args = append(args, "--fsync")
	}
	srv, err := l.startServer("append", args...)
	if err != nil {
		return Result{}, err
	}
	m := newMeter(name)
	res, serverCPU, err := l.drive(ctx, srv, m, conns, batch, int64(batchRecords), int64(batchRecords*len(value)))
	res.Extra = map[string]float64{"bytes_per_batch": float64(len(batch)), "records_per_batch": float64(batchRecords)}
	if gb := float64(res.Bytes) / 1e9; gb > 0 {
		res.Extra["server_cpu_seconds_per_gb"] = serverCPU.Seconds() / gb
	}
	return res, err
}

func (l *BaselineConfig) runRTT(ctx context.Context) (Result, error) {
	value := randomPayload(l.RTTBytes)
	batch := rawRecordBatch(1, value, time.Now().UnixMilli())
	srv, err := l.startServer("rtt", "--batch-bytes", strconv.Itoa(len(batch)))
	if err != nil {
		return Result{}, err
	}
	res, _, err := l.drive(ctx, srv, newMeter("rtt"), 1, batch, 1, int64(len(value)))
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
func (l *BaselineConfig) drive(ctx context.Context, srv *baselineProcess, m *meter, conns int, batch []byte, records, bytes int64) (Result, time.Duration, error) {
	producers, err := dialBaseline(ctx, srv.addr, conns, batch, records, bytes)
	if err != nil {
		return Result{}, 0, errors.Join(err, srv.stop())
	}
	defer func() {
		for _, p := range producers {
			p.c.nc.Close()
		}
	}()
	cpuBefore, err := srv.cpu()
	if err != nil {
		return Result{}, 0, errors.Join(err, srv.stop())
	}
	rctx, cancel := l.Run.context(ctx)
	defer cancel()
	m.start = time.Now()
	stop := m.progress(&l.Run)
	err = runRawProducers(rctx, producers, 1, l.Run.Count, m)
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
func (l *BaselineConfig) runCopy(ctx context.Context, dir string) (Result, error) {
	srv, err := l.startServer("copy", "--dir", dir, "--copy-bytes", strconv.FormatInt(l.CopyBytes, 10))
	if err != nil {
		return Result{}, err
	}
	conn, err := net.Dial("tcp", srv.addr)
	if err != nil {
		return Result{}, errors.Join(err, srv.stop())
	}
	defer conn.Close()
	serverBefore, err := srv.cpu()
	if err != nil {
		return Result{}, errors.Join(err, srv.stop())
	}
	m := newMeter("copy")
	rctx, cancel := l.Run.context(ctx)
	defer cancel()
	buf := make([]byte, l.ReadBytes)
	if d, ok := rctx.Deadline(); ok {
		conn.SetReadDeadline(d.Add(30 * time.Second)) // a stalled server ends the run with an error
	}
	clientBefore := cpuTime()
	m.start = time.Now()
	stop := m.progress(&l.Run)
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
	res.Records = res.Bytes / int64(l.RecordSize)
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
