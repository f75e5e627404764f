package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/partition"
)

func metadataRequest(version int16) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	return req
}

// TestApiVersionsRaw checks the exact answers: a supported version lists the
// table; an unsupported one gets a v0 body with UNSUPPORTED_VERSION and the
// ApiVersions range; both with response header v0, even for flexible v3.
func TestApiVersionsRaw(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	_, addr := startServer(t, cfg, HandlerFunc(func(context.Context, *Request) Response { return CloseConnection }))
	c := dialRaw(t, addr)

	for v := int16(0); v <= 3; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "spool-test", "1.0.0"
		resp := c.roundTrip(req, int32(100+v)).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 || len(resp.ApiKeys) != len(testVersions()) {
			t.Fatalf("v%d: error %d, %d keys", v, resp.ErrorCode, len(resp.ApiKeys))
		}
		for _, k := range resp.ApiKeys {
			if want := testVersions()[k.ApiKey]; want.Min != k.MinVersion || want.Max != k.MaxVersion {
				t.Fatalf("v%d: key %d advertised %d-%d, want %d-%d", v, k.ApiKey, k.MinVersion, k.MaxVersion, want.Min, want.Max)
			}
		}
	}

	for _, v := range []int16{4, 5, 77, -1} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "x", "1"
		if v == 77 || v == -1 {
			req.Version = 3 // kmsg cannot encode these; patch the header below
		}
		frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 7)
		binary.BigEndian.PutUint16(frame[6:8], uint16(v))
		if _, err := c.nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		got, err := c.readFrame()
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		// Header v0 (corr only), then a v0 body: error, [key 18: 0-3].
		want := []byte{0, 0, 0, 7, 0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3}
		if !bytes.Equal(got, want) {
			t.Fatalf("v%d: answer % x, want % x", v, got, want)
		}
	}

	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "-bad name", "1"
	if resp := c.roundTrip(req, 9).(*kmsg.ApiVersionsResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("invalid software name: error %d", resp.ErrorCode)
	}
}

// TestBadClientsCloseOnlyTheirConnection sends garbage, truncated frames,
// size prefixes out of range, unknown keys and versions: each connection is
// closed, and a well-behaved client on another connection is served
// throughout.
func TestBadClientsCloseOnlyTheirConnection(t *testing.T) {
	srv, b := startMiniBroker(t, func(c *Config) { c.MaxRequestBytes = 1 << 20 })
	good := dialRaw(t, b.addr)
	good.roundTrip(metadataRequest(12), 1)

	frameOf := func(req kmsg.Request) []byte { return kmsg.NewRequestFormatter().AppendRequest(nil, req, 5) }
	withKey := func(key, version int16) []byte {
		f := frameOf(metadataRequest(4))
		binary.BigEndian.PutUint16(f[4:6], uint16(key))
		binary.BigEndian.PutUint16(f[6:8], uint16(version))
		return f
	}
	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	meta := frameOf(metadataRequest(12))

	cases := map[string][]byte{
		"http":              []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"huge size":         size(1<<31 - 1),
		"over limit":        append(size(1<<20+1), make([]byte, 100)...),
		"negative size":     size(-5),
		"zero size":         size(0),
		"short header":      append(size(4), 0, 3, 0, 1),
		"truncated body":    append(size(100), meta[4:30]...),
		"truncated prefix":  {0, 0},
		"unknown key":       withKey(9999, 0),
		"unsupported key":   withKey(21, 0), // DeleteRecords: kmsg knows it, the table does not
		"version too high":  withKey(3, 13),
		"version too low":   withKey(3, 0),
		"body garbage":      append(append(size(int32(len(meta)-4+0)), meta[4:14]...), bytes.Repeat([]byte{0xff}, len(meta)-14)...),
		"client id overrun": append(size(12), 0, 3, 0, 12, 0, 0, 0, 1, 0x7f, 0xff, 'a', 'b'),
	}
	for name, payload := range cases {
		t.Run(name, func(t *testing.T) {
			before := srv.Stats().ProtocolErrors
			c := dialRaw(t, b.addr)
			c.nc.Write(payload)
			if name == "truncated body" || name == "truncated prefix" {
				c.nc.(*net.TCPConn).CloseWrite()
			}
			c.expectClosed()
			if name != "truncated prefix" { // an end inside the prefix may be a plain EOF
				retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().ProtocolErrors > before, "protocol error counted") })
			}
			good.roundTrip(metadataRequest(12), 2)
		})
	}
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().OpenConnections == 1, "bad connections gone") })
}

// TestHugeSizePrefixAllocatesLittle: a client that claims the largest
// allowed frame and then stalls must not make the server allocate it.
func TestHugeSizePrefixAllocatesLittle(t *testing.T) {
	claim := binary.BigEndian.AppendUint32(nil, DefaultMaxRequestBytes)
	r := io.MultiReader(bytes.NewReader(claim), bytes.NewReader(make([]byte, 100)))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(r, DefaultMaxRequestBytes)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errFrameTruncated) {
		t.Fatalf("err %v, want truncated", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*frameInitialAlloc {
		t.Fatalf("allocated %d bytes for a 100-byte frame claiming 100 MiB", grew)
	}
}

// TestPipelining: requests sent back to back are read ahead while the first
// is still being handled, handled in order, answered in order; an acks=0
// Produce gets no answer at all, even when the handler returns one.
func TestPipelining(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []int32
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	srv, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		mu.Lock()
		order = append(order, req.CorrelationID)
		mu.Unlock()
		if req.CorrelationID == 1 {
			<-release
		}
		return req.Body.ResponseKind() // for the acks=0 Produce too: wire must drop it
	}))
	c := dialRaw(t, addr)
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks = 9, 0
	var reqs []kmsg.Request
	for i := int32(1); i <= 6; i++ {
		var req kmsg.Request = metadataRequest(int16(i + 6)) // v7..v12: both header versions
		if i == 3 {
			req = produce
		}
		reqs = append(reqs, req)
		c.send(req, i)
	}
	// All six are decoded while request 1 is still in the handler.
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().RequestsTotal == 6, "read-ahead") })
	mu.Lock()
	if len(order) != 1 {
		t.Fatalf("handler ran %v while request 1 was in progress", order)
	}
	mu.Unlock()
	close(release)
	for i, req := range reqs {
		if i == 2 {
			continue // acks=0: nothing to read
		}
		c.readResponse(req, int32(i+1))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, corr := range order {
		if corr != int32(i+1) {
			t.Fatalf("handled in order %v", order)
		}
	}
}

// TestLongPollHoldsOnlyItsConnection: a handler blocked on one connection
// does not delay another; closing the blocked client cancels its context.
// Only the Fetch may wait (Config.Waits): the others are handled without
// the takeover timer.
func TestLongPollHoldsOnlyItsConnection(t *testing.T) {
	cancelled := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.Waits = func(req *Request) bool { return req.APIKey == 1 }
	_, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		if req.APIKey == 1 {
			<-ctx.Done()
			close(cancelled)
			return &FetchResponse{}
		}
		return req.Body.ResponseKind()
	}))
	slow := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	slow.send(fetch, 1)
	fast := dialRaw(t, addr)
	for i := int32(0); i < 20; i++ {
		fast.roundTrip(metadataRequest(12), i)
	}
	slow.nc.Close()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("handler context not cancelled when its client left")
	}
}

// TestSendfileOverLoopback: Fetch records reach a real TCP client intact,
// by sendfile (or by copy when disabled), at explicit offsets: the file's
// own position never moves. Every Slice is released.
func TestSendfileOverLoopback(t *testing.T) {
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, useSendfile := range []bool{true, false} {
		name := map[bool]string{true: "sendfile", false: "copy"}[useSendfile]
		t.Run(name, func(t *testing.T) {
			f := segmentFile(t, data)
			var released sync.WaitGroup
			spans := [][2]int64{{10, 1 << 20}, {2 << 20, 600_000}, {5, 5}}
			cfg := DefaultConfig()
			cfg.Versions = testVersions()
			cfg.Sendfile = useSendfile
			srv, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
				resp := &FetchResponse{}
				ft := FetchTopic{Topic: "t"}
				for i, s := range spans {
					released.Add(1)
					ft.Partitions = append(ft.Partitions, FetchPartition{Partition: int32(i), PreferredReadReplica: -1,
						Records: partition.NewSlice([]partition.Region{{File: f, Position: s[0], Length: s[1]}}, released.Done)})
				}
				resp.Topics = []FetchTopic{ft}
				return resp
			}))
			c := dialRaw(t, addr)
			var want int64
			for v := int16(4); v <= 12; v++ {
				fetch := kmsg.NewPtrFetchRequest()
				fetch.Version = v
				resp := c.roundTrip(fetch, int32(v)).(*kmsg.FetchResponse)
				for i, s := range spans {
					if got := resp.Topics[0].Partitions[i].RecordBatches; !bytes.Equal(got, data[s[0]:s[0]+s[1]]) {
						t.Fatalf("v%d partition %d: records differ", v, i)
					}
					want += s[1]
				}
			}
			released.Wait()
			st := srv.Stats()
			if useSendfile && (st.SendfileBytes != want || st.CopyBytes != 0) {
				t.Fatalf("sendfile %d copy %d, want %d by sendfile", st.SendfileBytes, st.CopyBytes, want)
			}
			if !useSendfile && (st.CopyBytes != want || st.SendfileBytes != 0) {
				t.Fatalf("sendfile %d copy %d, want %d by copy", st.SendfileBytes, st.CopyBytes, want)
			}
			if pos, _ := f.Seek(0, io.SeekCurrent); pos != 0 {
				t.Fatalf("the file's shared offset moved to %d", pos)
			}
		})
	}
}

// TestStalledReaderIsCutOff: a client that stops reading a large Fetch is
// disconnected after WriteTimeout, and the response's Slice is released.
func TestStalledReaderIsCutOff(t *testing.T) {
	f := segmentFile(t, nil)
	if err := os.Truncate(f.Name(), 64<<20); err != nil { // sparse: no 64 MiB written
		t.Fatal(err)
	}
	released := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.WriteTimeout = 300 * time.Millisecond
	srv, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		return &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
			Records: partition.NewSlice([]partition.Region{{File: f, Position: 0, Length: 64 << 20}}, func() { close(released) }),
		}}}}}
	}))
	c := dialRaw(t, addr)
	c.nc.(*net.TCPConn).SetReadBuffer(4096)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 12
	c.send(fetch, 1) // and never read
	select {
	case <-released:
	case <-time.After(20 * time.Second):
		t.Fatal("stalled write never gave up")
	}
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().OpenConnections == 0, "connection closed") })
}

// TestIdleTimeout closes a silent connection, but not one whose request is
// still being handled.
func TestIdleTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.IdleTimeout = 100 * time.Millisecond
	_, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		if req.CorrelationID == 2 {
			time.Sleep(5 * cfg.IdleTimeout) // a long poll outlasting the idle timeout
		}
		return req.Body.ResponseKind()
	}))
	busy := dialRaw(t, addr)
	busy.roundTrip(metadataRequest(12), 1)
	busy.roundTrip(metadataRequest(12), 2)
	silent := dialRaw(t, addr)
	silent.expectClosed()
}

// TestHandlerPanicClosesOnlyThatConnection.
func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	_, addr := startServer(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		if req.CorrelationID == 666 {
			panic("handler bug")
		}
		if req.CorrelationID == 667 {
			return nil // also a bug: no answer
		}
		return req.Body.ResponseKind()
	}))
	other := dialRaw(t, addr)
	other.roundTrip(metadataRequest(12), 1)
	for _, corr := range []int32{666, 667} {
		c := dialRaw(t, addr)
		c.roundTrip(metadataRequest(12), 1)
		c.send(metadataRequest(12), corr)
		c.expectClosed()
	}
	other.roundTrip(metadataRequest(12), 2)
}

// TestShutdownFinishesInFlight: Shutdown stops accepting, lets a request in
// the handler finish and its answer be written, then closes.
func TestShutdownFinishesInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.Log = testLog(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		if req.CorrelationID == 1 {
			close(entered)
			<-release
		}
		return req.Body.ResponseKind()
	}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c := dialRaw(t, ln.Addr().String())
	c.send(metadataRequest(12), 1)
	c.send(metadataRequest(12), 2) // read ahead: in flight too
	<-entered
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().RequestsTotal == 2, "read-ahead") })

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("still accepting after Shutdown")
	}
	close(release)
	c.readResponse(metadataRequest(12), 1)
	c.readResponse(metadataRequest(12), 2)
	c.expectClosed()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st := srv.Stats(); st.OpenConnections != 0 {
		t.Fatalf("%d connections open after Shutdown", st.OpenConnections)
	}
}

// TestShutdownDeadline: when the context ends first, connections are closed
// and handlers' contexts cancelled.
func TestShutdownDeadline(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.Log = testLog(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	srv := NewServer(cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		close(entered)
		<-ctx.Done()
		return req.Body.ResponseKind()
	}))
	go srv.Serve(ln)
	c := dialRaw(t, ln.Addr().String())
	c.send(metadataRequest(12), 1)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	c.expectClosed()
	retry.Run(t, 10*time.Second, func() error { return retry.Check(srv.Stats().OpenConnections == 0, "connections gone") })
}
