package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

  append  --producers loopback TCP connections each send batches of
          --batch-records records of --record-size bytes; the server write(2)s
          each batch to one file (O_APPEND, fsync with --fsync) and answers with
          4 bytes; the next batch goes when the answer is back.
  copy    a --copy-bytes file, read once into the page cache, is copied to a
          loopback socket with sendfile(2) over and over; the client reads
          into a --read-bytes buffer and drops it.
  rtt     one connection sends --rtt-bytes and waits for a 4-byte answer, one
          at a time; its p99 is the bare round trip.

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
			}}
			ctx := cmd.Context()
			for _, name := range strings.Split(l.only, ",") {
				var (
					res benchResult
					err error
				)
				switch strings.TrimSpace(name) {
				case "append":
					res, err = l.runAppend(ctx, dir, &common, cmd.ErrOrStderr())
				case "copy":
					res, err = l.runCopy(ctx, dir, &common, cmd.ErrOrStderr())
				case "rtt":
					res, err = l.runRTT(ctx, &common, cmd.ErrOrStderr())
				default:
					return fmt.Errorf("--only %q: want a list of append, copy, rtt", l.only)
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
	fs.IntVar(&l.batchRecords, "batch-records", 16, "records per appended batch")
	fs.IntVar(&l.producers, "producers", 1, "concurrent appending connections")
	fs.BoolVar(&l.fsync, "fsync", false, "fsync after every appended batch")
	fs.Int64Var(&l.copyBytes, "copy-bytes", 256<<20, "size of the file copied to the socket")
	fs.IntVar(&l.readBytes, "read-bytes", 1<<20, "the copy client's read buffer")
	fs.IntVar(&l.rttBytes, "rtt-bytes", 0, "bytes sent per round trip (0: --record-size)")
	fs.Int64Var(&l.rollBytes, "roll-bytes", 1<<30, "start a new append file (deleting the old) past this size, as a log rolls segments")
	fs.StringVar(&l.only, "only", "append,copy,rtt", "which measurements to run, in order")
	return cmd
}

func (l *baselineLoad) validate() error {
	if l.rttBytes == 0 {
		l.rttBytes = l.recordSize
	}
	switch {
	case l.recordSize < 1 || l.recordSize > maxBenchRecordSize:
		return fmt.Errorf("--record-size %d: want 1..%d", l.recordSize, maxBenchRecordSize)
	case l.batchRecords < 1 || int64(l.batchRecords)*int64(l.recordSize) > baselineFrameMax:
		return fmt.Errorf("--batch-records %d: want >= 1 and a batch of at most %d bytes", l.batchRecords, baselineFrameMax)
	case l.producers < 1 || l.producers > maxBenchProducers:
		return fmt.Errorf("--producers %d: want 1..%d", l.producers, maxBenchProducers)
	case l.copyBytes < 1<<20 || l.copyBytes > 64<<30:
		return fmt.Errorf("--copy-bytes %d: want 1 MiB..64 GiB", l.copyBytes)
	case l.readBytes < 1 || l.readBytes > baselineFrameMax:
		return fmt.Errorf("--read-bytes %d: want 1..%d", l.readBytes, baselineFrameMax)
	case l.rttBytes < 1 || l.rttBytes > baselineFrameMax:
		return fmt.Errorf("--rtt-bytes %d: want 1..%d", l.rttBytes, baselineFrameMax)
	case l.rollBytes < 1<<20:
		return fmt.Errorf("--roll-bytes %d: want at least 1 MiB", l.rollBytes)
	}
	return nil
}

// frameServer answers length-prefixed frames on loopback: handle sees each
// frame's payload (in a buffer reused for the next), then the client gets
// 4 bytes back.
type frameServer struct {
	ln     net.Listener
	handle func(payload []byte) error
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	errMu  sync.Mutex
	err    error
}

func startFrameServer(handle func([]byte) error) (*frameServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &frameServer{ln: ln, handle: handle}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				if err := s.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					s.errMu.Lock()
					if s.err == nil {
						s.err = err
					}
					s.errMu.Unlock()
				}
			}()
		}
	}()
	return s, nil
}

func (s *frameServer) serve(c net.Conn) error {
	var hdr [4]byte
	var buf []byte
	ack := []byte{0, 0, 0, 0}
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > baselineFrameMax {
			return fmt.Errorf("frame of %d bytes", n)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if err := s.handle(buf); err != nil {
			return err
		}
		if _, err := c.Write(ack); err != nil {
			return err
		}
	}
}

func (s *frameServer) close() error {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// roundTrips sends frame over c and waits for the answer until ctx ends,
// recording each round trip in m.
func roundTrips(ctx context.Context, c net.Conn, frame []byte, records, bytes int64, m *meter) error {
	var ack [4]byte
	for ctx.Err() == nil {
		start := time.Now()
		if _, err := c.Write(frame); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, ack[:]); err != nil {
			return err
		}
		m.latency.record(time.Since(start))
		m.add(records, bytes)
	}
	return nil
}

// driveFrames runs conns connections sending frame until ctx ends.
func driveFrames(ctx context.Context, addr string, conns int, frame []byte, records, bytes int64, m *meter) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- roundTrips(ctx, c, frame, records, bytes, m)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func lengthPrefixed(payload []byte) []byte {
	frame := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(frame, uint32(len(payload)))
	copy(frame[4:], payload)
	return frame
}

// appendFile is the append baseline's log: one file, written with plain
// write(2) under a lock (as one partition's appends are serialized), rolled
// past rollBytes.
type appendFile struct {
	mu    sync.Mutex
	dir   string
	f     *os.File
	size  int64
	roll  int64
	fsync bool
	rolls int
}

func (a *appendFile) open() error {
	name := filepath.Join(a.dir, fmt.Sprintf("%020d.log", a.rolls))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	a.f, a.size = f, 0
	return nil
}

func (a *appendFile) append(b []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.size+int64(len(b)) > a.roll {
		old := a.f.Name()
		a.f.Close()
		os.Remove(old)
		a.rolls++
		if err := a.open(); err != nil {
			return err
		}
	}
	// syscall.Write, not f.Write: exactly one write(2) per batch unless
	// the kernel takes less, which a regular file does not.
	for len(b) > 0 {
		n, err := syscall.Write(int(a.f.Fd()), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", a.f.Name(), err)
		}
		b = b[n:]
		a.size += int64(n)
	}
	if a.fsync {
		if err := a.f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", a.f.Name(), err)
		}
	}
	return nil
}

func (l *baselineLoad) runAppend(ctx context.Context, dir string, c *benchCommon, progress io.Writer) (benchResult, error) {
	af := &appendFile{dir: dir, roll: l.rollBytes, fsync: l.fsync}
	if err := af.open(); err != nil {
		return benchResult{}, err
	}
	defer func() { af.f.Close() }()
	srv, err := startFrameServer(af.append)
	if err != nil {
		return benchResult{}, err
	}
	batch := randomPayload(l.batchRecords * l.recordSize)
	m := newMeter("append")
	rctx, cancel := c.context(ctx)
	defer cancel()
	m.start = time.Now()
	stop := m.progress(progress, c.quiet)
	err = driveFrames(rctx, srv.ln.Addr().String(), l.producers, lengthPrefixed(batch), int64(l.batchRecords), int64(len(batch)), m)
	elapsed := time.Since(m.start)
	stop()
	if serr := srv.close(); err == nil {
		err = serr
	}
	res := m.result(elapsed, "batch round trip")
	res.Extra = map[string]float64{"bytes_per_batch": float64(len(batch)), "records_per_batch": float64(l.batchRecords)}
	return res, err
}

func (l *baselineLoad) runRTT(ctx context.Context, c *benchCommon, progress io.Writer) (benchResult, error) {
	srv, err := startFrameServer(func([]byte) error { return nil })
	if err != nil {
		return benchResult{}, err
	}
	payload := randomPayload(l.rttBytes)
	m := newMeter("rtt")
	rctx, cancel := c.context(ctx)
	defer cancel()
	m.start = time.Now()
	stop := m.progress(progress, c.quiet)
	err = driveFrames(rctx, srv.ln.Addr().String(), 1, lengthPrefixed(payload), 1, int64(len(payload)), m)
	elapsed := time.Since(m.start)
	stop()
	if serr := srv.close(); err == nil {
		err = serr
	}
	return m.result(elapsed, "round trip"), err
}

// runCopy copies a cached file to a loopback socket with sendfile(2) until
// the run ends.
func (l *baselineLoad) runCopy(ctx context.Context, dir string, c *benchCommon, progress io.Writer) (benchResult, error) {
	name := filepath.Join(dir, "copy.log")
	if err := writeRandomFile(name, l.copyBytes); err != nil {
		return benchResult{}, err
	}
	defer os.Remove(name)
	f, err := os.Open(name)
	if err != nil {
		return benchResult{}, err
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil { // into the page cache
		return benchResult{}, fmt.Errorf("read %s: %w", name, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return benchResult{}, err
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		tc := conn.(*net.TCPConn)
		for {
			// ReadFrom an *os.File is sendfile(2) on Linux.
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				served <- err
				return
			}
			if _, err := tc.ReadFrom(f); err != nil {
				served <- nil // the client hung up: the run is over
				return
			}
		}
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return benchResult{}, err
	}
	m := newMeter("copy")
	rctx, cancel := c.context(ctx)
	defer cancel()
	buf := make([]byte, l.readBytes)
	before := cpuTime()
	m.start = time.Now()
	stop := m.progress(progress, c.quiet)
	var readErr error
	for rctx.Err() == nil {
		n, err := conn.Read(buf)
		m.add(0, int64(n))
		if err != nil {
			readErr = err
			break
		}
	}
	elapsed := time.Since(m.start)
	cpu := cpuTime() - before
	stop()
	conn.Close()
	<-served
	res := m.result(elapsed, "")
	// Records as many --record-size records as the bytes would hold, so
	// records/s compares with consume's.
	res.Records = res.Bytes / int64(l.recordSize)
	res.RecordsPerSec = float64(res.Records) / elapsed.Seconds()
	if gb := float64(res.Bytes) / 1e9; gb > 0 {
		res.Extra = map[string]float64{"cpu_seconds_per_gb": cpu.Seconds() / gb}
	}
	return res, readErr
}

func writeRandomFile(name string, size int64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	chunk := randomPayload(1 << 20)
	for left := size; left > 0; {
		n := int64(len(chunk))
		if left < n {
			n = left
		}
		if _, err := f.Write(chunk[:n]); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", name, err)
		}
		left -= n
	}
	return f.Close()
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
