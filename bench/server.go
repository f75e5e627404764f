package bench

// The server half of Baseline, run in a process of its own (ServeMain, which
// spool runs as its hidden `spool bench baseline-server`), so the machine's
// limits are measured the way a broker is, a client process and a server
// process on loopback. It listens on 127.0.0.1:0, prints its address as one
// line on stdout and serves until its stdin closes (the baseline is done,
// or died); any error ends it with the error, which its process prints on
// stderr before a non-zero exit.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
)

// serverConfig is what one baseline server serves.
type serverConfig struct {
	mode      string // append, rtt, copy, replicated or follower
	dir       string // append: where the log files go; copy: where the copied file goes
	rollBytes int64
	fsync     bool
	copyBytes int64
	// batchBytes is the size of the record batch ending each Produce
	// request (append, rtt).
	batchBytes int
	// followers are the follower servers' addresses (replicated).
	followers []string
}

// ServeMain is a baseline server process's main: it parses the flags
// Baseline starts it with, prints the address it listens on to stdout and
// serves until stdin reaches its end.
func ServeMain(args []string, stdin io.Reader, stdout io.Writer) error {
	var s serverConfig
	fs := flag.NewFlagSet("baseline-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error returned says it
	fs.StringVar(&s.mode, "mode", "", "append, rtt, copy, replicated or follower")
	fs.StringVar(&s.dir, "dir", "", "directory for the append files or the copied file")
	fs.Int64Var(&s.rollBytes, "roll-bytes", 1<<30, "append: start a new file (deleting the old) past this size")
	fs.BoolVar(&s.fsync, "fsync", false, "append: fsync after every batch; replicated, follower: fdatasync (group commit) before answering")
	fs.Int64Var(&s.copyBytes, "copy-bytes", 256<<20, "copy: size of the file sent")
	fs.IntVar(&s.batchBytes, "batch-bytes", 0, "append, rtt, replicated: the size of the record batch each Produce request ends with")
	fs.Func("followers", "replicated: comma-separated addresses of the follower servers", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				s.followers = append(s.followers, a)
			}
		}
		return nil
	})
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, "The server process of 'spool bench baseline' (started by it). Flags:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	} else if err != nil {
		return fmt.Errorf("baseline-server: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("baseline-server: unexpected arguments %q", fs.Args())
	}
	return s.run(stdin, stdout)
}

// run serves until stdin reaches its end, having printed the address on out.
func (s *serverConfig) run(stdin io.Reader, out io.Writer) error {
	switch s.mode {
	case "append", "copy", "follower":
		if s.dir == "" {
			return fmt.Errorf("--mode %s needs --dir", s.mode)
		}
	case "replicated":
		if s.dir == "" || len(s.followers) == 0 {
			return fmt.Errorf("--mode replicated needs --dir and --followers")
		}
	case "rtt":
	default:
		return fmt.Errorf("--mode %q: want append, rtt, copy, replicated or follower", s.mode)
	}
	if s.mode != "copy" && s.mode != "follower" && (s.batchBytes < recordbatch.HeaderSize || s.batchBytes > baselineFrameMax) {
		return fmt.Errorf("--mode %s needs --batch-bytes, the size of the record batch each request carries (%d..%d)", s.mode, recordbatch.HeaderSize, baselineFrameMax)
	}
	if s.rollBytes < 1<<20 || s.copyBytes < 1<<20 || s.copyBytes > 64<<30 {
		return fmt.Errorf("--roll-bytes %d, --copy-bytes %d: want at least 1 MiB (copy at most 64 GiB)", s.rollBytes, s.copyBytes)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var srv *connServer
	switch s.mode {
	case "append":
		af := &appendFile{dir: s.dir, roll: s.rollBytes, fsync: s.fsync}
		if err := af.open(); err != nil {
			ln.Close()
			return err
		}
		defer func() { af.f.Close() }()
		srv = serveConns(ln, func(c net.Conn) error { return serveProduce(c, s.batchBytes, af.append) })
	case "follower":
		log, err := newReplLog(s.dir, s.rollBytes, s.fsync)
		if err != nil {
			ln.Close()
			return err
		}
		defer log.close()
		srv = serveConns(ln, func(c net.Conn) error { return serveFollower(c, log) })
	case "replicated":
		log, err := newReplLog(s.dir, s.rollBytes, s.fsync)
		if err != nil {
			ln.Close()
			return err
		}
		defer log.close()
		leader, err := newReplLeader(log, s.followers)
		if err != nil {
			ln.Close()
			return err
		}
		// Closed after the client connections (srv.close), so no append
		// is left waiting on a follower that is gone.
		defer leader.close()
		srv = serveConns(ln, func(c net.Conn) error { return serveProduce(c, s.batchBytes, leader.append) })
	case "rtt":
		srv = serveConns(ln, func(c net.Conn) error {
			return serveProduce(c, s.batchBytes, func([]byte) error { return nil })
		})
	case "copy":
		name := filepath.Join(s.dir, "copy.log")
		if err := writeCachedFile(name, s.copyBytes); err != nil {
			ln.Close()
			return err
		}
		defer os.Remove(name)
		srv = serveConns(ln, func(c net.Conn) error { return sendFileForever(c, name) })
	}
	if _, err := fmt.Fprintln(out, ln.Addr().String()); err != nil {
		srv.close()
		return fmt.Errorf("print address: %w", err)
	}
	// The baseline closes our stdin when it is done, and so does its end.
	io.Copy(io.Discard, stdin)
	return srv.close()
}

// connServer serves every connection accepted on ln with serve, keeping the
// first error a connection ended with (other than its client hanging up).
type connServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
	err   error
}

func serveConns(ln net.Listener, serve func(net.Conn) error) *connServer {
	s := &connServer{ln: ln}
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
				defer c.Close() // the client learns at once that we are done
				if err := serve(c); err != nil && !clientGone(err) {
					s.mu.Lock()
					if s.err == nil {
						s.err = err
					}
					s.mu.Unlock()
				}
			}()
		}
	}()
	return s
}

// clientGone reports whether err only says that the client hung up (or we
// closed the connection ourselves at the end).
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (s *connServer) close() error {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// serveProduce answers the raw produce client (rawProducer) as a broker
// would, with none of a broker's work: ApiVersions v0, the one request it
// sends before producing, gets a fixed answer, and each Produce request's
// record batch, the last batchBytes bytes before the request's tagged
// fields, goes to handle, then the client gets a fixed Produce response
// with the request's correlation ID. Requests are read through a buffer, so
// one read(2) usually takes a whole small request, as a broker reads them.
// Anything else is an error: only the baseline's own client connects.
func serveProduce(c net.Conn, batchBytes int, handle func(batch []byte) error) error {
	br := bufio.NewReaderSize(c, 64<<10)
	var (
		hdr     [4]byte
		buf     []byte
		answers = map[[2]int16][]byte{} // key and version → this connection's response frame
	)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n < 8 || n > baselineFrameMax {
			return fmt.Errorf("request of %d bytes from %s: want 8..%d", n, c.RemoteAddr(), baselineFrameMax)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		key, version := int16(binary.BigEndian.Uint16(buf)), int16(binary.BigEndian.Uint16(buf[2:]))
		answer := answers[[2]int16{key, version}]
		switch {
		case key == int16(kmsg.ApiVersions) && version == 0:
			if answer == nil {
				answer = baselineAPIVersions()
			}
		case key == int16(kmsg.Produce) && version >= 3 && version <= 9:
			tags := 0
			if version >= 9 { // flexible: the partition's, topic's and request's tagged fields follow
				tags = 3
			}
			end := len(buf) - tags
			if end-batchBytes < 8 {
				return fmt.Errorf("produce request of %d bytes from %s cannot hold a record batch of %d", n, c.RemoteAddr(), batchBytes)
			}
			batch := buf[end-batchBytes : end]
			if h, err := recordbatch.ParseHeader(batch); err != nil || h.Magic != recordbatch.Magic || h.Size() != int64(batchBytes) {
				return fmt.Errorf("produce request from %s does not end in one record batch of %d bytes", c.RemoteAddr(), batchBytes)
			}
			if err := handle(batch); err != nil {
				return err
			}
			if answer == nil {
				answer = baselineProduceAnswer(version)
			}
		default:
			return fmt.Errorf("request key %d version %d from %s: the baseline answers only ApiVersions v0 and Produce v3-9", key, version, c.RemoteAddr())
		}
		answers[[2]int16{key, version}] = answer
		copy(answer[4:8], buf[4:8]) // the correlation ID
		if _, err := c.Write(answer); err != nil {
			return err
		}
	}
}

// baselineAPIVersions is the answer to ApiVersions v0: Produce v3-9.
func baselineAPIVersions() []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range [][3]int16{{int16(kmsg.Produce), 3, 9}, {int16(kmsg.ApiVersions), 0, 0}} {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = k[0], k[1], k[2]
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	return responseFrame(resp)
}

// baselineProduceAnswer is a Produce response of version v acknowledging
// one partition, as a broker's answer to the raw client's request.
func baselineProduceAnswer(v int16) []byte {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = v
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "baseline"
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)
	return responseFrame(resp)
}

// responseFrame encodes resp as a response frame with correlation ID 0.
func responseFrame(resp kmsg.Response) []byte {
	b := []byte{0, 0, 0, 0, 0, 0, 0, 0} // size, correlation ID
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		b = append(b, 0) // no tagged fields in the header
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// sendFileForever copies the file to c with sendfile(2), from its start
// again and again, until the client hangs up. Each connection opens the
// file itself, so none moves another's position.
func sendFileForever(c net.Conn, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return fmt.Errorf("copy: %T is not a TCP connection", c)
	}
	for {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("seek %s: %w", name, err)
		}
		// ReadFrom an *os.File is sendfile(2) on Linux.
		if _, err := tc.ReadFrom(f); err != nil {
			return err
		}
	}
}

// writeCachedFile writes size random bytes to name and reads them back, so
// the file is in the page cache.
func writeCachedFile(name string, size int64) error {
	if err := writeRandomFile(name, size); err != nil {
		return err
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
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

// appendFile is the append baseline's log: one file, written with plain
// write(2) under a lock (as one partition's appends are serialized), rolled
// past roll bytes, the old file deleted.
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
		if err := os.Remove(old); err != nil {
			return fmt.Errorf("roll: %w", err)
		}
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
