package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A connection runs three goroutines joined by bounded queues:
//
//	reader:     frames → decoded requests    (reads ahead, up to PipelineDepth
//	                                          requests and ~MaxRequestBytes)
//	dispatcher: requests → Handler → responses, one request at a time, in order
//	writer:     responses → socket, strictly in request order
//
// so the next requests are read and decoded while one is handled, and the
// next is handled while a response is written, yet a connection's requests
// are handled in the order sent (Kafka's per-connection ordering, which
// Produce relies on). A long-poll Fetch holds only its own connection.
//
// Any failure closes the connection: the socket is closed, the handler's
// context cancelled, queued requests dropped unhandled and queued Fetch
// responses released. Shutdown instead stops only the reader; what was read
// is still handled and answered, and the writer closes the socket last.

var (
	errIdle         = errors.New("connection idle")
	errShuttingDown = errors.New("server shutting down")
)

type conn struct {
	srv    *Server
	nc     net.Conn
	log    *logrus.Entry
	ctx    context.Context
	cancel context.CancelFunc

	requests  chan inbound
	responses chan outbound

	// mu guards the read-ahead budget and closed; budget waits on cond.
	mu          sync.Mutex
	cond        *sync.Cond
	queuedBytes int64
	queued      int
	closed      bool
	closeOnce   sync.Once

	// inFlight counts requests read but not yet answered; while it is
	// positive the connection is not idle.
	inFlight     atomic.Int64
	lastActivity atomic.Int64 // unix nanoseconds

	wbuf []byte
}

// outbound is a handled request's response on its way to the writer.
type outbound struct {
	req  *Request
	resp Response
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		srv:       s,
		nc:        nc,
		log:       s.log.WithField("remote", nc.RemoteAddr().String()),
		ctx:       ctx,
		cancel:    cancel,
		requests:  make(chan inbound, s.cfg.PipelineDepth),
		responses: make(chan outbound, s.cfg.PipelineDepth),
	}
	c.cond = sync.NewCond(&c.mu)
	c.touch()
	return c
}

// serve runs the connection to its end.
func (c *conn) serve() {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); c.readLoop() }()
	go func() { defer wg.Done(); c.dispatchLoop() }()
	go func() { defer wg.Done(); c.writeLoop() }()
	wg.Wait()
	c.close(nil)
	c.srv.connDone(c)
}

func (c *conn) touch() { c.lastActivity.Store(time.Now().UnixNano()) }

// close ends the connection once; err, if set, is why.
func (c *conn) close(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.cond.Broadcast()
		c.mu.Unlock()
		c.cancel()
		c.nc.Close()
		if err != nil {
			c.log.WithError(err).Debug("connection closed")
		}
	})
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// stopReading makes the reader end at its next read (Shutdown).
func (c *conn) stopReading() { c.nc.SetReadDeadline(time.Now()) }

// panicked is each goroutine's last resort: a panic is a bug in wire, and
// must cost one connection, not the process.
func (c *conn) panicked(where string, r any) {
	c.log.WithFields(logrus.Fields{"panic": r, "in": where, "stack": string(debug.Stack())}).
		Error("panic serving connection; closing it")
	c.close(fmt.Errorf("panic in %s: %v", where, r))
}

// ---- reader ----

func (c *conn) readLoop() {
	defer close(c.requests)
	defer func() {
		if r := recover(); r != nil {
			c.panicked("reader", r)
		}
	}()
	// Buffered so that small pipelined requests cost one read between
	// them; bufio hands large frames' bodies straight to the socket read.
	r := bufio.NewReaderSize(idleReader{c: c}, readBufferSize)
	var scratch [4]byte
	for {
		in, err := c.readRequest(r, &scratch)
		if err != nil {
			c.readFailed(err)
			return
		}
		c.srv.stats.requests.Add(1)
		c.inFlight.Add(1)
		select {
		case c.requests <- in:
		case <-c.ctx.Done():
			c.unreserve(in.size)
			return
		}
	}
}

// protocolError marks a client's protocol violation, as opposed to the
// connection ending or failing underneath.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

// readRequest reads and decodes the next frame, holding its size in the
// read-ahead budget until the dispatcher is done with it.
func (c *conn) readRequest(r io.Reader, scratch *[4]byte) (inbound, error) {
	size, err := readFrameSize(r, scratch, c.srv.cfg.MaxRequestBytes)
	if err != nil {
		var sizeErr *frameSizeError
		if errors.As(err, &sizeErr) || errors.Is(err, errFrameTruncated) {
			err = &protocolError{err}
		}
		return inbound{}, err
	}
	if !c.reserve(size) {
		return inbound{}, net.ErrClosed
	}
	frame, err := readFrameBody(r, size)
	if err != nil {
		c.unreserve(size)
		if errors.Is(err, errFrameTruncated) {
			err = &protocolError{err}
		}
		return inbound{}, err
	}
	in, err := c.srv.decoder.decode(frame, c.nc.RemoteAddr())
	if err != nil {
		c.unreserve(size)
		return inbound{}, &protocolError{err}
	}
	return in, nil
}

// readFailed ends reading: quietly for a clean end or Shutdown, with a log
// line for a protocol error.
func (c *conn) readFailed(err error) {
	var perr *protocolError
	switch {
	case errors.Is(err, errShuttingDown):
		// Leave the queued requests to the dispatcher and writer.
	case errors.As(err, &perr):
		c.srv.stats.protocolErrors.Add(1)
		c.log.WithError(err).Warn("closing connection: bad request")
		c.close(err)
	case errors.Is(err, errIdle):
		c.log.WithField("idle_timeout", c.srv.cfg.IdleTimeout).Debug("closing idle connection")
		c.close(err)
	default:
		c.close(err) // end of stream, reset, or closed by the writer
	}
}

// isNetError reports a failure of the connection itself (peer gone, write
// deadline), which is not worth more than a debug line.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// readBufferSize is each connection's read buffer.
const readBufferSize = 16 << 10

// maxKeptWriteBuffer is the largest encode buffer a connection keeps between
// responses.
const maxKeptWriteBuffer = 1 << 20

// reserve waits until the frame fits the read-ahead budget: the first queued
// request always fits, later ones while the queue stays within
// MaxRequestBytes. It returns false if the connection closed meanwhile.
func (c *conn) reserve(size int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && c.queued > 0 && c.queuedBytes+int64(size) > int64(c.srv.cfg.MaxRequestBytes) {
		c.cond.Wait()
	}
	if c.closed {
		return false
	}
	c.queued++
	c.queuedBytes += int64(size)
	return true
}

func (c *conn) unreserve(size int32) {
	c.mu.Lock()
	c.queued--
	c.queuedBytes -= int64(size)
	c.cond.Broadcast()
	c.mu.Unlock()
}

// idleReader reads from the socket under the idle timeout: a read that times
// out while a request is in flight, or soon after other activity, is retried,
// so only a connection with nothing to do is closed.
type idleReader struct{ c *conn }

func (r idleReader) Read(p []byte) (int, error) {
	c := r.c
	idle := c.srv.cfg.IdleTimeout
	for {
		c.nc.SetReadDeadline(time.Now().Add(idle))
		// Checked after setting the deadline: Shutdown sets closing, then
		// a past deadline, so one of the two is always seen.
		if c.srv.closing.Load() {
			return 0, errShuttingDown
		}
		n, err := c.nc.Read(p)
		if n > 0 {
			c.touch()
		}
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if c.srv.closing.Load() {
			return n, errShuttingDown
		}
		if n > 0 || c.inFlight.Load() > 0 || time.Since(time.Unix(0, c.lastActivity.Load())) < idle {
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, errIdle
	}
}

// ---- dispatcher ----

func (c *conn) dispatchLoop() {
	defer close(c.responses)
	defer func() {
		if r := recover(); r != nil {
			c.panicked("dispatcher", r)
		}
		for in := range c.requests { // closed or panicked: drop the rest
			c.unreserve(in.size)
		}
	}()
	for in := range c.requests {
		if c.isClosed() {
			c.unreserve(in.size)
			continue
		}
		resp := in.answer
		if resp == nil {
			resp = c.handle(in.req)
			if isAcksZeroProduce(in.req) && resp != CloseConnection {
				releaseResponse(resp)
				resp = NoResponse // the client reads no answer; one would desynchronize it
			}
		}
		c.unreserve(in.size)
		c.responses <- outbound{req: in.req, resp: resp}
	}
}

// handle calls the Handler, turning a panic into a closed connection.
func (c *conn) handle(req *Request) (resp Response) {
	defer func() {
		if r := recover(); r != nil {
			c.log.WithFields(logrus.Fields{"panic": r, "api_key": req.APIKey, "api_version": req.APIVersion,
				"stack": string(debug.Stack())}).Error("handler panicked; closing connection")
			resp = CloseConnection
		}
	}()
	return c.srv.handler.ServeKafka(c.ctx, req)
}

// ---- writer ----

func (c *conn) writeLoop() {
	defer func() {
		if r := recover(); r != nil {
			c.panicked("writer", r)
		}
		for out := range c.responses { // closed: release what will never be sent
			releaseResponse(out.resp)
		}
		c.close(nil)
	}()
	tcp, _ := c.nc.(*net.TCPConn)
	if !c.srv.cfg.Sendfile {
		tcp = nil
	}
	fw := &frameWriter{
		w:   c.nc,
		tcp: tcp,
		refresh: func() error {
			return c.nc.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
		},
		stats: &c.srv.stats,
	}
	for out := range c.responses {
		if c.isClosed() {
			releaseResponse(out.resp)
			continue
		}
		err := c.write(fw, out)
		if cap(c.wbuf) > maxKeptWriteBuffer {
			c.wbuf = nil // one huge response should not pin its buffer
		}
		c.inFlight.Add(-1)
		c.touch()
		if err != nil {
			if errors.Is(err, errCloseRequested) {
				c.close(nil)
			} else if isNetError(err) {
				c.close(err)
			} else {
				c.log.WithError(err).WithFields(logrus.Fields{"api_key": out.req.APIKey, "api_version": out.req.APIVersion}).
					Error("cannot write response; closing connection")
				c.close(err)
			}
		}
	}
}

// write sends one response.
func (c *conn) write(fw *frameWriter, out outbound) error {
	req := out.req
	switch resp := out.resp.(type) {
	case noResponse:
		return nil
	case closeConnection:
		return errCloseRequested
	case fixedVersion:
		buf, err := appendKmsgResponse(c.wbuf[:0], req, resp.resp, resp.version)
		c.wbuf = buf
		if err != nil {
			return err
		}
		return fw.writeBytes(buf)
	case *FetchResponse:
		defer resp.Release()
		if req.APIKey != 1 {
			return fmt.Errorf("handler answered %s request with a FetchResponse", kmsg.NameForKey(req.APIKey))
		}
		frame, err := encodeFetch(c.wbuf, req.APIVersion, req.CorrelationID, resp)
		if err != nil {
			return err
		}
		c.wbuf = frame.buf
		return fw.writeFetch(frame)
	case kmsg.Response:
		buf, err := appendKmsgResponse(c.wbuf[:0], req, resp, req.APIVersion)
		c.wbuf = buf
		if err != nil {
			return err
		}
		return fw.writeBytes(buf)
	default:
		return fmt.Errorf("handler returned %T for %s, which wire cannot send", out.resp, kmsg.NameForKey(req.APIKey))
	}
}

// isAcksZeroProduce reports a Produce whose client expects no response.
func isAcksZeroProduce(req *Request) bool {
	p, ok := req.Body.(*kmsg.ProduceRequest)
	return ok && p.Acks == 0
}

// releaseResponse frees what an unsent response holds.
func releaseResponse(resp Response) {
	if f, ok := resp.(*FetchResponse); ok {
		f.Release()
	}
}
