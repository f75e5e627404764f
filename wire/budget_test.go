package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// bigProduce is a Produce v9 request carrying n bytes of records, which
// wire does not look into.
func bigProduce(n int, fill byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 5000
	tp := kmsg.NewProduceRequestTopicPartition()
	tp.Records = bytes.Repeat([]byte{fill}, n)
	tt := kmsg.NewProduceRequestTopic()
	tt.Topic = "t"
	tt.Partitions = append(tt.Partitions, tp)
	req.Topics = append(req.Topics, tt)
	return req
}

// holdingHandler blocks every Produce until its correlation ID is released,
// and records which arrived and the size of their records.
type holdingHandler struct {
	mu      sync.Mutex
	arrived map[int32]int // correlation ID → record bytes
	release map[int32]chan struct{}
}

func newHoldingHandler() *holdingHandler {
	return &holdingHandler{arrived: map[int32]int{}, release: map[int32]chan struct{}{}}
}

func (h *holdingHandler) gate(corr int32) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.release[corr]
	if !ok {
		ch = make(chan struct{})
		h.release[corr] = ch
	}
	return ch
}

func (h *holdingHandler) ServeKafka(ctx context.Context, req *Request) Response {
	if p, ok := req.Body.(*kmsg.ProduceRequest); ok {
		h.mu.Lock()
		h.arrived[req.CorrelationID] = len(p.Topics[0].Partitions[0].Records)
		h.mu.Unlock()
		select {
		case <-h.gate(req.CorrelationID):
		case <-ctx.Done():
		}
	}
	return req.Body.ResponseKind()
}

func (h *holdingHandler) has(corr int32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.arrived[corr]
	return ok
}

// sendAsync writes a request from another goroutine: with the server not
// reading, the write may not complete.
func (c *rawClient) sendAsync(req kmsg.Request, corr int32) {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)
	go c.nc.Write(frame)
}

// TestBudgetBlocksReadsUntilMemoryReturned: with the budget spent by two
// requests being handled, a third connection's request is not read (its
// reader waits) until one of them is answered; then it is.
func TestBudgetBlocksReadsUntilMemoryReturned(t *testing.T) {
	h := newHoldingHandler()
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.QueuedMaxRequestBytes = 512 << 10
	srv, addr := startServer(t, cfg, h)
	// 200 KiB frames: one 256 KiB buffer each.
	a, b, c := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	a.sendAsync(bigProduce(200<<10, 'a'), 1)
	b.sendAsync(bigProduce(200<<10, 'b'), 2)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(h.has(1) && h.has(2), "both held") })
	if got := srv.Stats().QueuedRequestBytes; got != 512<<10 {
		t.Fatalf("queued request bytes %d with two 200 KiB requests held, want %d", got, 512<<10)
	}
	c.sendAsync(bigProduce(200<<10, 'c'), 3)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.budget.waiting() == 1, "the third reader waiting for memory") })
	if h.has(3) {
		t.Fatal("request 3 was handled while the budget was spent")
	}
	close(h.gate(1))
	a.readResponse(bigProduce(0, 0), 1)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(h.has(3), "request 3 handled once memory was returned") })
	if h.arrived[3] != 200<<10 {
		t.Fatalf("request 3 carried %d record bytes, want %d", h.arrived[3], 200<<10)
	}
	close(h.gate(2))
	close(h.gate(3))
	b.readResponse(bigProduce(0, 0), 2)
	c.readResponse(bigProduce(0, 0), 3)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().QueuedRequestBytes == 0, "budget back to zero") })
}

// TestBudgetNotLeaked: frames cut short, undecodable, oversized, or whose
// handler panicked, connections closed while their reader waits for memory,
// give back all they held: afterwards the budget is empty and a request that
// needs all of it is served.
func TestBudgetNotLeaked(t *testing.T) {
	h := newHoldingHandler()
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.QueuedMaxRequestBytes = 512 << 10
	cfg.Log = testLog(t)
	srv, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		if req.CorrelationID == 66 {
			panic("handler bug")
		}
		return h.ServeKafka(ctx, req)
	}))

	// Cut short: claims 100 MiB, sends 300 KiB, hangs up.
	for i := 0; i < 5; i++ {
		cut := dialRaw(t, addr)
		cut.nc.Write(binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes))
		cut.nc.Write(append([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0}, make([]byte, 300<<10)...))
		cut.nc.Close()
	}
	// Undecodable: an unknown API key, whole.
	bad := dialRaw(t, addr)
	bad.nc.Write(append(binary.BigEndian.AppendUint32(nil, 300<<10), append([]byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1}, make([]byte, 300<<10-8)...)...))
	bad.expectClosed()
	// Oversized: closed before anything is taken.
	huge := dialRaw(t, addr)
	huge.nc.Write(binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes+1))
	huge.expectClosed()
	// A handler that panics.
	panicky := dialRaw(t, addr)
	panicky.sendAsync(bigProduce(100<<10, 'p'), 66)
	panicky.expectClosed()
	retry.Run(t, 10*time.Second, func() error {
		return retry.Check(srv.Stats().QueuedRequestBytes == 0 && srv.budget.waiting() == 0, "budget empty after the failures")
	})

	// Spend the budget, then have readers wait for it and hang up.
	x, y := dialRaw(t, addr), dialRaw(t, addr)
	x.sendAsync(bigProduce(200<<10, 'x'), 1)
	y.sendAsync(bigProduce(200<<10, 'y'), 2)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(h.has(1) && h.has(2), "both held") })
	for i := 0; i < 3; i++ {
		w := dialRaw(t, addr)
		w.sendAsync(bigProduce(200<<10, 'w'), int32(10+i))
		retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.budget.waiting() == 1+i, "reader waiting") })
		w.nc.Close()
	}
	// x hangs up while its request is in the handler: it is cancelled,
	// answered into a closed socket, and gives its memory back.
	x.nc.Close()
	close(h.gate(2))
	y.readResponse(bigProduce(0, 0), 2)

	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.budget.waiting() == 0, "no reader waiting") })
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().QueuedRequestBytes == 0, "budget empty") })
	srv.budget.mu.Lock()
	running, overdraft := srv.budget.running, srv.budget.overdraft
	srv.budget.mu.Unlock()
	if running != 0 || overdraft != 0 {
		t.Fatalf("budget empty but %d frames counted as holding it (overdraft %d)", running, overdraft)
	}
	// All of it is there: a request of 512 KiB less a little fits alone.
	whole := dialRaw(t, addr)
	close(h.gate(99))
	whole.roundTrip(bigProduce(512<<10-4096, 'z'), 99)
	if h.arrived[99] != 512<<10-4096 {
		t.Fatalf("request carried %d record bytes", h.arrived[99])
	}
}

// TestFrameLargerThanBudgetServed: a frame bigger than the whole budget (but
// within MaxRequestBytes) is served; so are two frames that each need more
// than half of it at once, whichever gets memory first (neither waits for
// the other for ever).
func TestFrameLargerThanBudgetServed(t *testing.T) {
	h := newHoldingHandler()
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.QueuedMaxRequestBytes = 1 << 20
	srv, addr := startServer(t, cfg, h)
	for corr := int32(1); corr <= 3; corr++ {
		close(h.gate(corr))
	}

	big := dialRaw(t, addr)
	big.roundTrip(bigProduce(5<<20, 'b'), 1)
	if h.arrived[1] != 5<<20 {
		t.Fatalf("5 MiB request carried %d record bytes", h.arrived[1])
	}

	// Each 700 KiB frame takes 256 KiB, then a 1 MiB buffer: two at once
	// cannot both fit.
	p, q := dialRaw(t, addr), dialRaw(t, addr)
	p.sendAsync(bigProduce(700<<10, 'p'), 2)
	q.sendAsync(bigProduce(700<<10, 'q'), 3)
	p.readResponse(bigProduce(0, 0), 2)
	q.readResponse(bigProduce(0, 0), 3)
	if h.arrived[2] != 700<<10 || h.arrived[3] != 700<<10 {
		t.Fatalf("700 KiB requests carried %d and %d record bytes", h.arrived[2], h.arrived[3])
	}
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().QueuedRequestBytes == 0, "budget empty") })
}

// TestClaimedFrameCostsWhatArrived: a frame that claims 100 MiB and brings
// 300 KiB costs a buffer of twice that at most, in memory and in the
// budget, not its claim.
func TestClaimedFrameCostsWhatArrived(t *testing.T) {
	claim := binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes)
	r := io.MultiReader(bytes.NewReader(claim), bytes.NewReader(make([]byte, 300<<10)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(r, DefaultMaxRequestBytes)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errFrameTruncated) {
		t.Fatalf("err %v, want truncated", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
		t.Fatalf("allocated %d bytes for 300 KiB of a frame claiming 100 MiB", grew)
	}

	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	srv, addr := startServer(t, cfg, newHoldingHandler())
	c := dialRaw(t, addr)
	c.nc.Write(binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes))
	c.nc.Write(append([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0}, make([]byte, 300<<10)...))
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().QueuedRequestBytes == 512<<10, "the 300 KiB read") })
	c.nc.Close()
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().QueuedRequestBytes == 0, "budget empty") })
}

// TestRequestReadTimeout: a request trickled a byte at a time is cut off
// once RequestReadTimeout has passed since its first byte, though the
// connection is never idle; a connection quiet between requests for longer
// than that is not; nor is one whose request waited that long for memory.
func TestRequestReadTimeout(t *testing.T) {
	h := newHoldingHandler()
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.RequestReadTimeout = 300 * time.Millisecond
	cfg.QueuedMaxRequestBytes = 512 << 10
	srv, addr := startServer(t, cfg, h)

	quiet := dialRaw(t, addr)
	quiet.roundTrip(metadataRequest(12), 1)

	slow := dialRaw(t, addr)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, metadataRequest(12), 7)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < len(frame)-1; i++ {
			if _, err := slow.nc.Write(frame[i : i+1]); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	slow.expectClosed()
	<-done
	if n := srv.Stats().RequestReadTimeouts; n != 1 {
		t.Fatalf("request read timeouts %d, want 1", n)
	}
	// Quiet for longer than the slow request took, and still served.
	quiet.roundTrip(metadataRequest(12), 2)

	// Memory spent, a request waits for it past the timeout (the wait is
	// the server's, not the client's), then is served.
	x, y, w := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	x.sendAsync(bigProduce(200<<10, 'x'), 1)
	y.sendAsync(bigProduce(200<<10, 'y'), 2)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(h.has(1) && h.has(2), "both held") })
	w.sendAsync(bigProduce(200<<10, 'w'), 3)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.budget.waiting() == 1, "reader waiting") })
	time.Sleep(3 * cfg.RequestReadTimeout)
	close(h.gate(1))
	close(h.gate(2))
	close(h.gate(3))
	x.readResponse(bigProduce(0, 0), 1)
	y.readResponse(bigProduce(0, 0), 2)
	w.readResponse(bigProduce(0, 0), 3)
	if n := srv.Stats().RequestReadTimeouts; n != 1 {
		t.Fatalf("request read timeouts %d after a wait for memory, want still 1", n)
	}
}

// TestByteBudgetDirect drives the budget alone: waiters in order, the first
// waiter let past the limit only once every holder waits (and only it, until
// it is released), and a wait given up leaves nothing behind.
func TestByteBudgetDirect(t *testing.T) {
	b := newByteBudget(100)
	never := make(chan struct{})
	take := func(c *frameCharge, n int64, stop chan struct{}) chan bool {
		done := make(chan bool, 1)
		go func() {
			ok, _ := b.take(c, n, stop, never)
			done <- ok
		}()
		return done
	}
	granted := func(done chan bool, what string) {
		t.Helper()
		select {
		case ok := <-done:
			if !ok {
				t.Fatalf("%s: gave up", what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting", what)
		}
	}

	a, bb, c := b.newCharge(), b.newCharge(), b.newCharge()
	granted(take(&a, 60, never), "a 60")
	granted(take(&bb, 30, never), "b 30")
	// b wants more: a is running (it may return memory), so b waits.
	bMore := take(&bb, 30, never)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(b.waiting() == 1, "b waiting") })
	// c gives up its wait: nothing is left of it.
	stopC := make(chan struct{})
	cDone := take(&c, 5, stopC)
	retry.Run(t, 10*time.Second, func() error { return retry.Check(b.waiting() == 2, "c waiting") })
	close(stopC)
	if ok := <-cDone; ok || c.held != 0 {
		t.Fatalf("c's given-up wait: ok %v, held %d", ok, c.held)
	}
	b.release(&c)
	// a wants more too: now every holder waits, so b, first in line,
	// goes past the limit.
	aMore := take(&a, 50, never)
	granted(bMore, "b past the limit")
	if b.overdraft != bb.id || b.inUse() != 120 {
		t.Fatalf("overdraft %d (b is %d), in use %d, want b and 120", b.overdraft, bb.id, b.inUse())
	}
	// b may go on past it alone; a still waits.
	granted(take(&bb, 10, never), "b on past the limit")
	if b.waiting() != 1 {
		t.Fatalf("%d waiting, want a", b.waiting())
	}
	// b answered: a is alone and waiting, so it goes past in turn.
	b.release(&bb)
	granted(aMore, "a once b released")
	b.release(&a)
	if b.inUse() != 0 || b.running != 0 || b.overdraft != 0 || b.waiting() != 0 {
		t.Fatalf("after all released: in use %d, running %d, overdraft %d, waiting %d",
			b.inUse(), b.running, b.overdraft, b.waiting())
	}
}
