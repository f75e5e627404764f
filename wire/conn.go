package wire

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
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

// A connection is served by one goroutine, or two while a slow request is
// handled, playing two roles:
//
//	reader: frames → decoded requests (reads ahead, up to PipelineDepth
//	        requests and ~MaxRequestBytes)
//	worker: requests → Handler → response written to the socket, one
//	        request at a time, strictly in the order read
//
// A request that arrives while nothing else is queued or being worked on is
// handled by the reader itself, which then writes the response: a client
// with one request in flight costs one goroutine wake-up per request, not
// three. If that request may wait (Config.Waits: a long-poll Fetch) and
// takes longer than inlineGrace, a new reader takes over reading, so read-ahead continues and a client that
// hangs up is noticed (cancelling the handler's context); the old reader
// finishes its request and then, as the worker, what the new reader queued.
// Otherwise the reader queues the request for the worker already running.
// Either way a connection's requests are handled and answered in the order
// sent (Kafka's per-connection ordering, which Produce relies on), and a
// long-poll Fetch holds only its own connection.
//
// Any failure closes the connection: the socket is closed, the handler's
// context cancelled and queued requests dropped unhandled. Shutdown instead
// stops only reading; what was read is still handled and answered, and the
// socket is closed once the last goroutine ends.

var (
	errIdle           = errors.New("connection idle")
	errShuttingDown   = errors.New("server shutting down")
	errRequestTimeout = errors.New("request not received within the request read timeout")
)

// inlineGrace is how long a reader handling a request itself goes before
// another reader takes over reading.
const inlineGrace = time.Millisecond

// producePool holds the frame buffers of Produce requests, the only frames
// whose buffers wire reuses (see Request.Body).
var producePool framePool

// apiKeyProduce is Produce's API key, read ahead of the frame to choose its
// buffer.
const apiKeyProduce = 0

type conn struct {
	srv    *Server
	nc     net.Conn
	log    *logrus.Entry
	ctx    context.Context
	cancel context.CancelFunc
	// connContext derives ctx once the connection is set up (ListenerOptions).
	connContext func(context.Context, net.Conn) context.Context
	// limit bounds the next frame further (ListenerOptions.RequestLimit).
	limit func(context.Context) int32

	// mu guards the read-ahead budget, the queue and the roles; cond
	// signals budget or queue space and closing.
	mu          sync.Mutex
	cond        *sync.Cond
	queuedBytes int64
	queued      int       // requests read and not yet handled (the budget)
	pending     []inbound // read and waiting for the worker, in order
	working     bool      // a goroutine is handling and answering requests
	inline      bool      // ... and it is the reader, handling one itself
	handedOff   bool      // a new reader took over while the old one was inline
	closed      bool
	closeOnce   sync.Once

	goroutines sync.WaitGroup
	takeover   *time.Timer

	// encodeTime is how long write took to encode the response it last
	// wrote, for the Handler's WriteObserver (only the worker touches it).
	encodeTime time.Duration

	// muteFor is the mute a handler asked for (throttle.go), in
	// nanoseconds, taken by the worker once the response is written.
	muteFor atomic.Int64

	// rawSASL is set while the frames read are raw SASL tokens (sasl_raw.go).
	rawSASL atomic.Bool

	// inFlight counts requests read but not yet answered; while it is
	// positive the connection is not idle.
	inFlight     atomic.Int64
	lastActivity atomic.Int64 // unix nanoseconds

	// Owned by the current reader; a reader taking over reading goes on
	// from the same buffer. Buffered so that small pipelined requests cost
	// one read between them; bufio hands large frames' bodies straight to
	// the socket read.
	br           *bufio.Reader
	sizeBuf      [4]byte
	readDeadline time.Time
	// frameDeadline is when the frame being read must be whole; zero
	// between frames.
	frameDeadline time.Time
	// acct charges the frame being read to the server's byte budget.
	acct frameAccount
	// Owned by whoever is working (mu hands the role over).
	writeDeadline time.Time
	fw            *frameWriter
	wbuf          []byte
}

// outbound is a handled request's response on its way to the socket.
type outbound struct {
	req  *Request
	resp Response
}

func newConn(s *Server, nc net.Conn, opts ListenerOptions) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	log := s.log.WithField("remote", nc.RemoteAddr().String())
	if opts.TLS != nil {
		// From here on every byte, Fetch records included, goes through
		// the TLS connection: tcp stays nil below, so no sendfile.
		nc = tls.Server(nc, opts.TLS)
	}
	c := &conn{
		srv:         s,
		nc:          nc,
		log:         log,
		ctx:         ctx,
		cancel:      cancel,
		connContext: opts.ConnContext,
		limit:       opts.RequestLimit,
	}
	c.ctx = context.WithValue(ctx, muteKey{}, c)
	c.cond = sync.NewCond(&c.mu)
	c.acct = frameAccount{budget: s.budget, stop1: ctx.Done(), stop2: s.shutdown, deadline: &c.frameDeadline}
	c.br = bufio.NewReaderSize(idleReader{c: c}, readBufferSize)
	tcp, _ := nc.(*net.TCPConn)
	if !s.cfg.Sendfile {
		tcp = nil
	}
	c.fw = &frameWriter{w: nc, tcp: tcp, refresh: c.extendWriteDeadline, stats: &s.stats}
	c.takeover = time.AfterFunc(time.Hour, c.takeOver)
	c.takeover.Stop()
	c.touch()
	return c
}

// serve runs the connection to its end.
func (c *conn) serve() {
	if err := c.handshake(); err != nil {
		c.close(err)
		c.takeover.Stop()
		c.srv.connDone(c)
		return
	}
	if c.connContext != nil {
		c.ctx = c.connContext(c.ctx, c.nc)
	}
	c.goroutines.Add(1)
	c.readLoop()
	c.goroutines.Wait()
	c.takeover.Stop()
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
		// The socket first: a handler its cancel wakes must find it
		// closed, not write an answer to a connection being closed.
		c.nc.Close()
		c.cancel()
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

// readLoop reads requests until reading ends or it hands reading over to a
// new reader (and becomes the worker).
func (c *conn) readLoop() {
	defer c.goroutines.Done()
	defer func() {
		if r := recover(); r != nil {
			c.panicked("reader", r)
			// A frame being read when it happened gives its memory back.
			c.srv.budget.release(&c.acct.charge)
		}
	}()
	for {
		in, err := c.readRequest(c.br, &c.sizeBuf)
		if err != nil {
			c.readFailed(err)
			return
		}
		c.srv.stats.requests.Add(1)
		c.inFlight.Add(1)

		c.mu.Lock()
		for !c.closed && c.working && len(c.pending) >= c.srv.cfg.PipelineDepth {
			c.cond.Wait()
		}
		switch {
		case c.closed:
			c.mu.Unlock()
			c.drop(in)
			return
		case c.working:
			c.pending = append(c.pending, in)
			c.mu.Unlock()
			continue
		}
		// Nothing queued, nothing being answered: handle it here.
		c.working, c.inline = true, true
		c.mu.Unlock()
		armed := in.answer == nil && c.mayWait(in.req)
		if armed {
			c.takeover.Reset(inlineGrace)
		}
		c.process(in)
		if armed {
			c.takeover.Stop()
		}
		c.mu.Lock()
		c.inline = false
		handedOff := c.handedOff
		c.handedOff = false
		if !handedOff {
			// Nobody read meanwhile, so nothing can be queued.
			c.working = false
		}
		c.mu.Unlock()
		if handedOff {
			c.work() // another reader reads now; answer what it queued
			return
		}
	}
}

// mayWait is Config.Waits, true when unset.
func (c *conn) mayWait(req *Request) bool {
	return c.srv.cfg.Waits == nil || c.srv.cfg.Waits(req)
}

// takeOver starts a new reader when the reader has been handling one
// request itself for inlineGrace (the takeover timer's function).
func (c *conn) takeOver() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inline || c.handedOff || c.closed {
		return
	}
	c.handedOff = true
	c.goroutines.Add(1) // the inline reader holds one, so the count is not zero
	go c.readLoop()
}

// protocolError marks a client's protocol violation, as opposed to the
// connection ending or failing underneath.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return e.err.Error() }
func (e *protocolError) Unwrap() error { return e.err }

// readRequest reads and decodes the next frame, holding its size in the
// read-ahead budget and its buffer in the server's byte budget until it has
// been handled. The frame must be whole within RequestReadTimeout of its
// first byte.
func (c *conn) readRequest(r *bufio.Reader, scratch *[4]byte) (inbound, error) {
	if _, err := r.Peek(1); err != nil {
		return inbound{}, err // io.EOF here is a clean end
	}
	c.frameDeadline = time.Now().Add(c.srv.cfg.RequestReadTimeout)
	defer func() { c.frameDeadline = time.Time{} }()
	raw := c.rawSASL.Load()
	minSize, maxSize := int32(minFrameSize), c.srv.cfg.MaxRequestBytes
	if raw {
		minSize, maxSize = 0, min(maxSize, maxRawSASLToken)
	}
	if c.limit != nil {
		if l := c.limit(c.ctx); l > 0 {
			maxSize = min(maxSize, l)
		}
	}
	size, err := readFrameSizeWithin(r, scratch, minSize, maxSize)
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
	// Only Produce frames, by far the largest and most frequent, go in
	// pooled buffers; the API key is the header's first field.
	// (A raw SASL token has no header, and may be shorter than two bytes.)
	var pool *framePool
	if !raw {
		key, perr := r.Peek(2)
		if perr == nil && int16(binary.BigEndian.Uint16(key)) == apiKeyProduce {
			pool = &producePool
		}
		err = perr
	}
	var (
		frame []byte
		buf   *frameBuffer
	)
	c.acct.charge = c.srv.budget.newCharge()
	if err == nil {
		frame, buf, err = readFrameBody(r, size, pool, &c.acct)
	} else if errors.Is(err, io.EOF) {
		err = errFrameTruncated
	}
	if err != nil {
		c.srv.budget.release(&c.acct.charge)
		c.unreserve(size)
		switch {
		case errors.Is(err, errFrameTruncated):
			err = &protocolError{err}
		case errors.Is(err, errBudgetWaitStopped) && c.srv.closing.Load():
			err = errShuttingDown
		case errors.Is(err, errBudgetWaitStopped):
			err = net.ErrClosed
		}
		return inbound{}, err
	}
	var in inbound
	if raw {
		in = rawSASLRequest(frame, c.nc.RemoteAddr())
	} else {
		decodeStart := time.Now()
		in, err = c.srv.decoder.decode(frame, c.nc.RemoteAddr())
		if in.req != nil {
			in.req.DecodeTime = time.Since(decodeStart)
		}
	}
	if err != nil {
		c.srv.budget.release(&c.acct.charge)
		c.unreserve(size)
		pool.put(buf)
		return inbound{}, &protocolError{err}
	}
	in.charge, c.acct.charge = c.acct.charge, frameCharge{}
	if pool != nil {
		in.pool, in.buf = pool, buf
	}
	return in, nil
}

// readFailed ends reading: quietly for a clean end or Shutdown, with a log
// line for a protocol error.
func (c *conn) readFailed(err error) {
	var perr *protocolError
	switch {
	case errors.Is(err, errShuttingDown):
		// Leave the queued requests to the worker.
	case errors.As(err, &perr):
		c.srv.stats.protocolErrors.Add(1)
		c.log.WithError(err).Warn("closing connection: bad request")
		c.close(err)
	case errors.Is(err, errRequestTimeout):
		c.srv.stats.requestTimeouts.Add(1)
		c.log.WithError(err).WithField("request_read_timeout", c.srv.cfg.RequestReadTimeout).
			Warn("closing connection: request too slow to arrive")
		c.close(err)
	case errors.Is(err, errIdle):
		c.log.WithField("idle_timeout", c.srv.cfg.IdleTimeout).Debug("closing idle connection")
		c.close(err)
	default:
		c.close(err) // end of stream, reset, or closed after a failed write
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
	if !c.closed && c.queued > 0 && c.queuedBytes+int64(size) > int64(c.srv.cfg.MaxRequestBytes) {
		// Waiting for this connection's own requests to be handled is
		// not the client being slow: the frame's deadline moves on.
		start := time.Now()
		for !c.closed && c.queued > 0 && c.queuedBytes+int64(size) > int64(c.srv.cfg.MaxRequestBytes) {
			c.cond.Wait()
		}
		c.frameDeadline = c.frameDeadline.Add(time.Since(start))
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

// idleReader reads from the socket under two deadlines: the request read
// timeout while a frame is arriving, and the idle timeout between frames. A
// read that times out between frames while a request is in flight, or soon
// after other activity, is retried, so only a connection with nothing to do
// is closed. The socket's deadline is kept between half of readStep and all
// of it ahead (and never past the frame's), and is moved only when less than
// half is left, not at every read: setting it costs a lock and a timer
// update in the runtime. So the socket's deadline, set before a frame began,
// falls no later than the frame's; one that falls earlier (a refresh due, or
// the frame's deadline moved on by a wait for memory) is simply moved on.
type idleReader struct{ c *conn }

func (r idleReader) Read(p []byte) (int, error) {
	c := r.c
	step := c.srv.readStep
	for {
		if now := time.Now(); c.readDeadline.Sub(now) < step/2 {
			d := now.Add(step)
			if !c.frameDeadline.IsZero() && c.frameDeadline.Before(d) {
				d = c.frameDeadline
			}
			if !d.Equal(c.readDeadline) {
				c.readDeadline = d
				c.nc.SetReadDeadline(d)
			}
		}
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
		if n > 0 {
			return n, nil
		}
		now := time.Now()
		if !c.frameDeadline.IsZero() {
			if !now.Before(c.frameDeadline) {
				return 0, errRequestTimeout
			}
			c.readDeadline = earliest(c.frameDeadline, now.Add(step))
			c.nc.SetReadDeadline(c.readDeadline)
			continue
		}
		idle := c.srv.cfg.IdleTimeout
		last := time.Unix(0, c.lastActivity.Load())
		if c.inFlight.Load() > 0 || now.Sub(last) < idle {
			// Due again a whole timeout after the last activity (which may
			// be a response written since the deadline was set), or a step
			// from now if that is sooner.
			c.readDeadline = earliest(last.Add(idle), now.Add(step))
			if soonest := now.Add(step/2 + time.Millisecond); c.readDeadline.Before(soonest) {
				c.readDeadline = soonest // in flight: look again later
			}
			c.nc.SetReadDeadline(c.readDeadline)
			continue
		}
		return n, errIdle
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ---- worker ----

// work answers queued requests in order until the queue is empty.
func (c *conn) work() {
	defer func() {
		if r := recover(); r != nil {
			c.panicked("worker", r)
		}
	}()
	for {
		c.mu.Lock()
		if len(c.pending) == 0 || c.closed {
			dropped := c.pending
			c.pending = nil
			c.working = false
			c.cond.Broadcast()
			c.mu.Unlock()
			for _, in := range dropped {
				c.drop(in)
			}
			return
		}
		in := c.pending[0]
		c.pending[0] = inbound{}
		c.pending = c.pending[1:]
		c.cond.Broadcast()
		c.mu.Unlock()
		c.process(in)
	}
}

// drop forgets a request that will not be handled.
func (c *conn) drop(in inbound) {
	c.unreserve(in.size)
	c.inFlight.Add(-1)
	in.pool.put(in.buf)
	c.srv.budget.release(&in.charge)
}

// process handles one request and writes its response.
func (c *conn) process(in inbound) {
	if c.isClosed() {
		c.drop(in)
		return
	}
	resp, panicked := in.answer, false
	if resp == nil {
		resp, panicked = c.handle(in.req)
		if isAcksZeroProduce(in.req) && resp != CloseConnection {
			_, closing := resp.(thenClose)
			releaseResponse(resp)
			resp = NoResponse // the client reads no answer; one would desynchronize it
			if closing {
				resp = CloseConnection
			}
		}
	}
	c.unreserve(in.size)
	c.encodeTime = 0
	err := c.write(outbound{req: in.req, resp: resp})
	if obs, ok := c.srv.handler.(WriteObserver); ok && err == nil && in.answer == nil && !panicked && c.encodeTime > 0 {
		obs.ResponseWritten(c.ctx, in.req, c.encodeTime)
	}
	if !panicked {
		// The Handler has returned and its response is on the wire, so
		// nothing refers to the frame any more (the Request.Body promise).
		in.pool.put(in.buf)
	}
	// A panicked handler's frame is left to the garbage collector, which
	// is as good as returned.
	c.srv.budget.release(&in.charge)
	if cap(c.wbuf) > maxKeptWriteBuffer {
		c.wbuf = nil // one huge response should not pin its buffer
	}
	c.inFlight.Add(-1)
	c.touch()
	if err == nil {
		c.waitMuted()
	} else {
		c.muteFor.Store(0)
	}
	if err != nil {
		if errors.Is(err, errCloseRequested) {
			c.close(nil)
		} else if isNetError(err) {
			c.close(err)
		} else {
			c.log.WithError(err).WithFields(logrus.Fields{"api_key": in.req.APIKey, "api_version": in.req.APIVersion}).
				Error("cannot write response; closing connection")
			c.close(err)
		}
	}
}

// handle calls the Handler, turning a panic into a closed connection.
func (c *conn) handle(req *Request) (resp Response, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			c.log.WithFields(logrus.Fields{"panic": r, "api_key": req.APIKey, "api_version": req.APIVersion,
				"stack": string(debug.Stack())}).Error("handler panicked; closing connection")
			resp, panicked = CloseConnection, true
		}
	}()
	return c.srv.handler.ServeKafka(c.ctx, req), false
}

// extendWriteDeadline gives the next chunk of a response WriteTimeout to
// make progress. Like the read deadline, it moves only once less than half
// of it is left, so a write that makes no progress fails after between half
// of WriteTimeout and all of it.
func (c *conn) extendWriteDeadline() error {
	now := time.Now()
	if c.writeDeadline.Sub(now) >= c.srv.cfg.WriteTimeout/2 {
		return nil
	}
	c.writeDeadline = now.Add(c.srv.cfg.WriteTimeout)
	return c.nc.SetWriteDeadline(c.writeDeadline)
}

// write sends one response.
func (c *conn) write(out outbound) error {
	fw, req := c.fw, out.req
	switch resp := out.resp.(type) {
	case noResponse:
		return nil
	case closeConnection:
		return errCloseRequested
	case startRawSASL:
		c.rawSASL.Store(true)
		return c.write(outbound{req: req, resp: resp.resp})
	case rawSASLToken:
		if resp.done {
			c.rawSASL.Store(false)
		}
		buf := appendRawSASLToken(c.wbuf[:0], resp.token)
		c.wbuf = buf
		return fw.writeBytes(buf)
	case thenClose:
		if err := c.write(outbound{req: req, resp: resp.resp}); err != nil {
			return err
		}
		return errCloseRequested
	case fixedVersion:
		start := time.Now()
		buf, err := appendKmsgResponse(c.wbuf[:0], req, resp.resp, resp.version)
		c.encodeTime = time.Since(start)
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
		start := time.Now()
		frame, err := encodeFetch(c.wbuf, req.APIVersion, req.CorrelationID, resp)
		c.encodeTime = time.Since(start)
		if err != nil {
			return err
		}
		c.wbuf = frame.buf
		return fw.writeFetch(frame)
	case kmsg.Response:
		start := time.Now()
		buf, err := appendKmsgResponse(c.wbuf[:0], req, resp, req.APIVersion)
		c.encodeTime = time.Since(start)
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
