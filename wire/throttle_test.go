package wire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A handler's Throttle holds the connection's next request back for the
// time asked, from the response on; other connections are not held, and
// a connection closing ends the mute.
func TestThrottleMutesTheConnection(t *testing.T) {
	const mute = 400 * time.Millisecond
	var mu sync.Mutex
	handled := map[int32]time.Time{}
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	srv, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		mu.Lock()
		handled[req.CorrelationID] = time.Now()
		mu.Unlock()
		if req.CorrelationID == 1 {
			Throttle(ctx, mute)
			Throttle(ctx, time.Millisecond) // a shorter one does not cut it
		}
		return req.Body.ResponseKind()
	}))
	c, other := dialRaw(t, addr), dialRaw(t, addr)
	c.roundTrip(metadataRequest(9), 1)
	answered := time.Now()
	c.send(metadataRequest(9), 2) // sent at once, held by the mute
	start := time.Now()
	other.roundTrip(metadataRequest(9), 10)
	if d := time.Since(start); d > mute/2 {
		t.Errorf("another connection waited %v", d)
	}
	c.readResponse(metadataRequest(9), 2)
	mu.Lock()
	held := handled[2].Sub(answered)
	mu.Unlock()
	if held < mute-20*time.Millisecond {
		t.Errorf("request 2 handled %v after the throttled response, want at least %v", held, mute)
	}
	if srv.Stats().ThrottledResponses != 1 {
		t.Errorf("%d throttled responses counted, want 1", srv.Stats().ThrottledResponses)
	}
	// Not muted again: request 3 goes through at once.
	start = time.Now()
	c.roundTrip(metadataRequest(9), 3)
	if d := time.Since(start); d > mute/2 {
		t.Errorf("request 3 waited %v", d)
	}
	// Throttle outside a connection does nothing.
	Throttle(context.Background(), time.Second)
}

// ListenerOptions.Admit refusing a connection: nothing of it reaches the
// handler, it is closed after the delay asked, and it is counted; the
// next one admitted is served.
func TestAdmitRefusesAConnection(t *testing.T) {
	const hold = 300 * time.Millisecond
	var mu sync.Mutex
	refuse := true
	var handled int
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	srv, addr := startListener(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		mu.Lock()
		handled++
		mu.Unlock()
		return req.Body.ResponseKind()
	}), ListenerOptions{Admit: func(net.Addr) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if refuse {
			refuse = false
			return hold
		}
		return 0
	}})
	c := dialRaw(t, addr)
	start := time.Now()
	c.send(metadataRequest(9), 1)
	if _, err := c.readFrame(); err == nil {
		t.Fatal("a refused connection was answered")
	}
	if d := time.Since(start); d < hold-20*time.Millisecond {
		t.Errorf("the refused connection closed after %v, want %v", d, hold)
	}
	if got := srv.Stats().ConnectionsThrottled; got != 1 {
		t.Errorf("%d connections counted throttled, want 1", got)
	}
	dialRaw(t, addr).roundTrip(metadataRequest(9), 2)
	mu.Lock()
	defer mu.Unlock()
	if handled != 1 {
		t.Errorf("the handler saw %d requests, want only the admitted connection's", handled)
	}
}

// observingHandler is a Handler that is also a WriteObserver.
type observingHandler struct {
	mu      sync.Mutex
	decode  []time.Duration // per handled request
	written map[int32]time.Duration
}

func (h *observingHandler) ServeKafka(ctx context.Context, req *Request) Response {
	h.mu.Lock()
	h.decode = append(h.decode, req.DecodeTime)
	h.mu.Unlock()
	return req.Body.ResponseKind()
}

func (h *observingHandler) ResponseWritten(ctx context.Context, req *Request, took time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.written[req.CorrelationID] = took
}

// What request quotas count outside the Handler: each request it sees
// carries its decoding time, and a Handler that is a WriteObserver hears
// of each of its responses once written, with the time its encoding
// took; not of ApiVersions, which wire answers itself.
func TestWriteObserverAndDecodeTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	h := &observingHandler{written: map[int32]time.Duration{}}
	_, addr := startServer(t, cfg, h)
	c := dialRaw(t, addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	c.roundTrip(av, 1)
	c.roundTrip(metadataRequest(9), 2)
	c.roundTrip(metadataRequest(9), 3)
	// The observer runs after the write: the client may read the
	// response first.
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.written)
		h.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.decode) != 2 {
		t.Fatalf("the handler saw %d requests, want the 2 Metadata", len(h.decode))
	}
	for i, d := range h.decode {
		if d <= 0 {
			t.Errorf("request %d carried decode time %v", i, d)
		}
	}
	if _, ok := h.written[1]; ok {
		t.Error("the observer heard of wire's own ApiVersions answer")
	}
	for _, corr := range []int32{2, 3} {
		if d, ok := h.written[corr]; !ok || d <= 0 {
			t.Errorf("response %d: observed %v, %v; want an encoding time", corr, d, ok)
		}
	}
}
