package integration

// Hostile clients on raw TCP: garbage, truncated frames, absurd size
// prefixes, malformed bodies and topic names that would escape the data
// directory. Afterwards the node must still serve an honest client, every
// record produced before must read back, and nothing may have been created
// outside (or unexpectedly inside) the data directory.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
)

// invalidTopicNames break Kafka's rules; several would be paths outside the
// data directory if used as given.
var invalidTopicNames = map[string]string{
	"dotdot-slash": "../x",
	"slash":        "a/b",
	"empty":        "",
	"250-chars":    strings.Repeat("t", 250),
	"nul-byte":     "ab\x00cd",
	"dot":          ".",
	"dotdot":       "..",
	"abs-path":     "/tmp/spool-abuse",
	"space":        "a b",
}

func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.SetDeadline(time.Now().Add(15 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// expectClosedByServer reads until the server closes the connection,
// failing if it is still open at the deadline. Whatever the server sent
// before closing is ignored.
func expectClosedByServer(t testing.TB, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: the node kept the connection open (no close within 10s)", what)
	}
}

// roundTripRaw sends one kmsg request on a raw connection and decodes the
// response.
func roundTripRaw(t testing.TB, c net.Conn, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("spool-abuse")).AppendRequest(nil, req, corr)
	if _, err := c.Write(frame); err != nil {
		t.Fatalf("write %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	body := readRawResponse(t, c, corr)
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != 18 { // response header v1: tagged fields
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("%s v%d: unexpected response header tags", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// readRawResponse reads one response frame and returns what follows the
// correlation id.
func readRawResponse(t testing.TB, c net.Conn, corr int32) []byte {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("read response size (correlation %d): %v", corr, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 16<<20 {
		t.Fatalf("response size %d (correlation %d)", n, corr)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatalf("read response (correlation %d): %v", corr, err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		t.Fatalf("response correlation id %d, want %d", got, corr)
	}
	return body[4:]
}

// rawRecordBatch is a valid, uncompressed v2 batch of one record.
func rawRecordBatch(value string) []byte {
	h := recordbatch.NoProducer()
	h.FirstTimestamp = time.Now().UnixMilli()
	h.MaxTimestamp = h.FirstTimestamp
	b, err := recordbatch.Build(nil, h, []recordbatch.Record{{Key: []byte("k"), Value: []byte(value)}}, nil)
	if err != nil {
		panic(err) // uncompressed: cannot fail
	}
	return b
}

// dirTree lists every directory under root, relative to it.
func dirTree(t testing.TB, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	slices.Sort(dirs)
	return dirs
}

// TestAbuseFramesAndNames attacks the Kafka listener and then checks that
// the node survived with its data intact.
func TestAbuseFramesAndNames(t *testing.T) {
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	n := StartNode(t, WithDir(dataDir))

	// Data that must survive: two partitions, compressed and not.
	topic := uniqueTopic("abuse-keep")
	franzCreateTopic(t, n.KafkaAddr, topic, 2)
	recs := makeRecords("keep", 40, recentBase())
	for i := range recs {
		recs[i].Partition = int32(i % 2)
	}
	franzProduce(t, franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression())), topic, recs[:20], 10)
	franzProduce(t, franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, recs[20:], 10)
	dirsBefore := dirTree(t, root)

	// Frames: each must end with the node closing the connection on its own
	// (or, where the client stops mid-frame, at least not hurting the node).
	var garbage [64 << 10]byte
	rand.Read(garbage[:])
	frames := []struct {
		name      string
		data      []byte
		halfClose bool // client stops sending: the node sees EOF mid-frame
	}{
		{"http-request", []byte("GET / HTTP/1.1\r\nHost: spool\r\n\r\n"), false}, // size 0x47455420 > limit
		{"random-64KiB", garbage[:], true},
		{"size-0x7fffffff", []byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 3}, false},
		{"size-negative", []byte{0xff, 0xff, 0xff, 0xfe, 0, 18, 0, 3}, false},
		{"size-min-int32", []byte{0x80, 0, 0, 0}, false},
		{"size-zero", []byte{0, 0, 0, 0}, false},
		{"size-one-byte-body", []byte{0, 0, 0, 1, 0}, false},
		{"truncated-size", []byte{0, 0}, true},
		{"truncated-frame", append([]byte{0, 0, 0, 100}, make([]byte, 10)...), true},
		{"unknown-api-key", kmsg.NewRequestFormatter().AppendRequest(nil, &unknownRequest{key: 9999}, 1), false},
	}
	// A valid Produce v7 header whose body stops inside the topic array,
	// with a frame length that matches what was sent.
	{
		full := kmsg.NewRequestFormatter().AppendRequest(nil, produceRequest(7, topic, 0, rawRecordBatch("torn")), 5)
		cut := full[:len(full)-40]
		binary.BigEndian.PutUint32(cut, uint32(len(cut)-4))
		frames = append(frames, struct {
			name      string
			data      []byte
			halfClose bool
		}{"produce-v7-truncated-body", cut, false})
		// The same body, but the array counts claim two billion topics.
		huge := slices.Clone(full)
		// Produce v7 body: transactional id (int16 -1), acks int16, timeout int32, then the topic count.
		// Frame header: size 4, key 2, version 2, correlation 4, null client id 2.
		off := 14 + 2 + 2 + 4
		binary.BigEndian.PutUint32(huge[off:], 0x7ffffff0)
		frames = append(frames, struct {
			name      string
			data      []byte
			halfClose bool
		}{"produce-v7-huge-array-count", huge, false})
		// A flexible Produce v9 whose compact array claims far more elements
		// than bytes remain.
		full9 := kmsg.NewRequestFormatter().AppendRequest(nil, produceRequest(9, topic, 0, rawRecordBatch("torn")), 6)
		huge9 := slices.Clone(full9[:4+2+2+4+2+1+1+2+4])
		huge9 = append(huge9, 0xff, 0xff, 0xff, 0xff, 0x07) // uvarint ~2^31
		binary.BigEndian.PutUint32(huge9, uint32(len(huge9)-4))
		frames = append(frames, struct {
			name      string
			data      []byte
			halfClose bool
		}{"produce-v9-huge-compact-array", huge9, false})
	}
	for _, f := range frames {
		c := dialRaw(t, n.KafkaAddr)
		if _, err := c.Write(f.data); err != nil {
			continue // the node may close while we still write: that is fine
		}
		if f.halfClose {
			c.(*net.TCPConn).CloseWrite()
		}
		expectClosedByServer(t, c, f.name)
		c.Close()
	}

	// ApiVersions at a version from the future: UNSUPPORTED_VERSION in a v0
	// body (v0 response header) that lists what is supported.
	{
		c := dialRaw(t, n.KafkaAddr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 99
		req.ClientSoftwareName, req.ClientSoftwareVersion = "spool-abuse", "1"
		if _, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 42)); err != nil {
			t.Fatalf("write ApiVersions v99: %v", err)
		}
		body := readRawResponse(t, c, 42)
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(body); err != nil {
			t.Errorf("ApiVersions v99: response is not a v0 body: %v", err)
		} else if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
			t.Errorf("ApiVersions v99: error %s with %d keys, want UNSUPPORTED_VERSION listing the supported keys", errName(resp.ErrorCode), len(resp.ApiKeys))
		}
		c.Close()
	}

	// Invalid topic names through CreateTopics, Produce and auto-creating
	// Metadata, old and flexible versions: INVALID_TOPIC_EXCEPTION each time.
	c := dialRaw(t, n.KafkaAddr)
	corr := int32(100)
	for what, name := range invalidTopicNames {
		for _, v := range []int16{2, 4, 5} {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version = v
			req.TimeoutMillis = 5000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, rt)
			corr++
			resp := roundTripRaw(t, c, req, corr).(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
				t.Errorf("CreateTopics v%d %s (%q): %s, want INVALID_TOPIC_EXCEPTION", v, what, name, describeCreateTopics(resp))
			}
		}
		for _, v := range []int16{3, 7, 9} {
			corr++
			resp := roundTripRaw(t, c, produceRequest(v, name, 0, rawRecordBatch("bad")), corr).(*kmsg.ProduceResponse)
			code := int16(-100)
			if len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1 {
				code = resp.Topics[0].Partitions[0].ErrorCode
			}
			if code != kerr.InvalidTopicException.Code {
				t.Errorf("Produce v%d %s (%q): error %s, want INVALID_TOPIC_EXCEPTION", v, what, name, errName(code))
			}
		}
		for _, v := range []int16{4, 9, 12} {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = v
			req.AllowAutoTopicCreation = true
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, mt)
			corr++
			resp := roundTripRaw(t, c, req, corr).(*kmsg.MetadataResponse)
			code := int16(-100)
			if len(resp.Topics) == 1 {
				code = resp.Topics[0].ErrorCode
			}
			if code != kerr.InvalidTopicException.Code {
				t.Errorf("Metadata v%d auto-create %s (%q): error %s, want INVALID_TOPIC_EXCEPTION", v, what, name, errName(code))
			}
		}
	}
	c.Close()

	// Nothing was created anywhere: no directory outside the data dir, no
	// new directory inside it.
	if dirsAfter := dirTree(t, root); !slices.Equal(dirsBefore, dirsAfter) {
		t.Errorf("directories changed under %s:\nbefore %q\nafter  %q", root, dirsBefore, dirsAfter)
	}
	if _, err := os.Stat("/tmp/spool-abuse-0"); err == nil {
		t.Errorf("/tmp/spool-abuse-0 exists: an absolute topic name became a path")
	}

	// The node still serves, and the data from before is intact.
	franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
	franzRoundTripCheck(t, n.KafkaAddr, uniqueTopic("abuse-after"))
	if logs := n.Logs(); strings.Contains(strings.ToLower(logs), "panic") {
		t.Errorf("the node logged a panic")
	}
}

// TestAbuseHugeFrameNotAllocated sends many connections' worth of 100 MiB
// size prefixes at once; a node that allocated what each claims before
// checking would need gigabytes. It must close them all and stay up.
func TestAbuseHugeFrameNotAllocated(t *testing.T) {
	n := StartNode(t)
	var conns []net.Conn
	for i := 0; i < 64; i++ {
		c := dialRaw(t, n.KafkaAddr)
		// Exactly the default limit (accepted as a size), then nothing more.
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], 100<<20)
		c.Write(hdr[:])
		c.Write([]byte{0, 0, 0, 7, 0, 0, 0, 1, 0, 0}) // Produce v7 header start
		conns = append(conns, c)
	}
	// While those wait for bytes that never come, an honest client works.
	franzRoundTripCheck(t, n.KafkaAddr, uniqueTopic("abuse-huge"))
	for _, c := range conns {
		c.Close()
	}
	retry.Run(t, 10*time.Second, func() error {
		st := n.Stats(t)
		if open, _ := st["open_connections"].(float64); open > 10 {
			return fmt.Errorf("%v connections still open after the clients closed", open)
		}
		return nil
	})
}

func produceRequest(version int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func describeCreateTopics(resp *kmsg.CreateTopicsResponse) string {
	var b bytes.Buffer
	for _, rt := range resp.Topics {
		fmt.Fprintf(&b, "[%q: %s] ", rt.Topic, errName(rt.ErrorCode))
	}
	if b.Len() == 0 {
		return "no topics in the response"
	}
	return b.String()
}

func errName(code int16) string {
	if code == -100 {
		return "(missing from the response)"
	}
	if code == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return err.Error()
	}
	return fmt.Sprint(code)
}

// unknownRequest is a request for an API key no broker knows.
type unknownRequest struct{ key int16 }

func (r *unknownRequest) Key() int16                  { return r.key }
func (r *unknownRequest) MaxVersion() int16           { return 0 }
func (r *unknownRequest) SetVersion(int16)            {}
func (r *unknownRequest) GetVersion() int16           { return 0 }
func (r *unknownRequest) IsFlexible() bool            { return false }
func (r *unknownRequest) AppendTo(dst []byte) []byte  { return append(dst, 1, 2, 3, 4) }
func (r *unknownRequest) ReadFrom([]byte) error       { return nil }
func (r *unknownRequest) ResponseKind() kmsg.Response { return nil }
