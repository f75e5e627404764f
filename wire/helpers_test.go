package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testLog is a logger that writes into the test's output.
func testLog(t testing.TB) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(testWriter{t})
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// testVersions is a version table like the broker's, for tests.
func testVersions() map[int16]VersionRange {
	return map[int16]VersionRange{
		0:  {3, 9},  // Produce
		1:  {4, 12}, // Fetch
		3:  {1, 12}, // Metadata
		18: {0, 3},  // ApiVersions
	}
}

// startServer serves h on a loopback port until the test ends.
func startServer(t testing.TB, cfg Config, h Handler) (*Server, string) {
	t.Helper()
	return startListener(t, cfg, h, ListenerOptions{})
}

// startListener is startServer with listener options (TLS).
func startListener(t testing.TB, cfg Config, h Handler, opts ListenerOptions) (*Server, string) {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = testLog(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(cfg, h)
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(ln, opts) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return srv, ln.Addr().String()
}

// rawClient speaks the protocol by hand, to see exact bytes.
type rawClient struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) send(req kmsg.Request, corr int32) {
	c.t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatal(err)
	}
}

// readFrame reads one response frame (without its size prefix).
func (c *rawClient) readFrame() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, buf)
	return buf, err
}

// roundTrip sends req and decodes the response, checking the correlation
// ID and the response header version.
func (c *rawClient) roundTrip(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	c.send(req, corr)
	return c.readResponse(req, corr)
}

func (c *rawClient) readResponse(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	frame, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("read response to %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		c.t.Fatalf("correlation ID %d, want %d", got, corr)
	}
	body := frame[4:]
	if req.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("flexible response header lacks its empty tag section")
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed asserts the server closes the connection (EOF or reset)
// without sending anything more.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("connection still open: read %d bytes, err %v", n, err)
	}
}

// segmentFile writes data to a file in the test's temp dir and opens it.
func segmentFile(t testing.TB, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
