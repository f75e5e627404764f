package bench

// The raw client's Kafka framing: one connection speaking just enough of
// the protocol by hand (ApiVersions, then Produce or Fetch) that no client
// library does work per record.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFrameMax bounds a response frame the raw client reads.
const rawFrameMax = 256 << 20

// rawClientID is the client ID of every raw request.
const rawClientID = "spool-bench-raw"

// rawConn is one connection speaking the protocol by hand.
type rawConn struct {
	nc       net.Conn
	br       *bufio.Reader
	versions map[int16]int16 // API key → the broker's highest version
	buf      []byte
}

func dialRawKafka(ctx context.Context, addr string) (*rawConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), versions: map[int16]int16{}}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0 // every broker answers v0
	if _, err := c.nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(rawClientID)).AppendRequest(nil, req, 0)); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions to %s: %w", addr, err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	if err := c.readResponse(req, resp); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		nc.Close()
		return nil, fmt.Errorf("api versions from %s: %w", addr, err)
	}
	for _, k := range resp.ApiKeys {
		c.versions[k.ApiKey] = k.MaxVersion
	}
	return c, nil
}

// version is the version to send of key: the broker's highest, capped at
// want; an error if the broker does not reach least.
func (c *rawConn) version(key, least, want int16) (int16, error) {
	max, ok := c.versions[key]
	if !ok || max < least {
		return 0, fmt.Errorf("broker does not serve %s v%d or later", kmsg.NameForKey(key), least)
	}
	return min(max, want), nil
}

// readFrame reads one response frame into the connection's buffer.
func (c *rawConn) readFrame() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.br, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > rawFrameMax {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	if cap(c.buf) < int(n) {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.br, c.buf); err != nil {
		return nil, err
	}
	return c.buf, nil
}

// readResponse reads the answer to req into resp. The body aliases the
// connection's buffer until the next read.
func (c *rawConn) readResponse(req kmsg.Request, resp kmsg.Response) error {
	frame, err := c.readFrame()
	if err != nil {
		return err
	}
	body := frame[4:] // correlation ID: answers come in request order
	if req.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body)
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("bad response header tags")
	}
	b = b[l:]
	for ; n > 0; n-- {
		_, l1 := binary.Uvarint(b)
		if l1 <= 0 {
			return nil, errors.New("bad response header tag")
		}
		size, l2 := binary.Uvarint(b[l1:])
		if l2 <= 0 || uint64(len(b)) < uint64(l1+l2)+size {
			return nil, errors.New("bad response header tag")
		}
		b = b[uint64(l1+l2)+size:]
	}
	return b, nil
}
