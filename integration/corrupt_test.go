package integration

// Damaged bytes on disk (issue 18, item 4), with a real node and franz-go:
// recovery keeps what it cuts in DATA/quarantine and logs it at ERROR; a
// corrupt length in a sealed segment no longer blocks the intact batches
// before it; a flipped payload byte is found by the scrubber, refused with
// KAFKA_STORAGE_ERROR, counted, and listed by /v1/scrub and `spool scrub`.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/partition"
)

// scrubStatus is the part of /v1/scrub (scrub.Status) the tests read,
// decoded from JSON as any client of the admin API would.
type scrubStatus struct {
	RateBytesPerSec int64          `json:"rate_bytes_per_sec"`
	Passes          int            `json:"passes"`
	BytesScrubbed   int64          `json:"bytes_scrubbed"`
	CorruptBatches  int            `json:"corrupt_batches"`
	Corrupt         []scrubFinding `json:"corrupt"`
	Quarantined     []scrubFinding `json:"quarantined"`
}

type scrubFinding struct {
	Topic      string    `json:"topic"`
	Partition  int32     `json:"partition"`
	FoundAt    time.Time `json:"found_at"`
	Segment    string    `json:"segment"`
	Position   int64     `json:"position"`
	Offset     int64     `json:"offset"`
	EndOffset  int64     `json:"end_offset"`
	Bytes      int64     `json:"bytes"`
	Reason     string    `json:"reason"`
	Quarantine string    `json:"quarantine"`
}

// diskBatch is one batch of a segment file.
type diskBatch struct {
	pos int64
	h   partition.BatchHeader
}

// segmentLogs lists a partition directory's segment files, oldest first.
func segmentLogs(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(logs)
	return logs
}

// segmentBatches reads a segment file and splits it into batches.
func segmentBatches(t *testing.T, path string) ([]byte, []diskBatch) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []diskBatch
	for pos := int64(0); pos < int64(len(b)); {
		h, err := recordbatch.ParseHeader(b[pos:])
		if err != nil || h.Size() <= 0 || pos+h.Size() > int64(len(b)) {
			t.Fatalf("%s at %d: not a batch: %v", path, pos, err)
		}
		out = append(out, diskBatch{pos: pos, h: h})
		pos += h.Size()
	}
	return b, out
}

// writeByteAt changes bytes in place, as a failing disk would, without
// touching the file's size or the node's view of it.
func writeBytesAt(t *testing.T, path string, pos int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

// produceBatches produces n records to partition 0 of a new one-partition
// topic, four to a batch, and returns them with their offsets.
func produceBatches(t *testing.T, n *Node, topic string, count int) []testRecord {
	t.Helper()
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	recs := makeRecords(topic, count, recentBase())
	franzProduce(t, franzClient(t, n.KafkaAddr), topic, recs, 4)
	for i, r := range recs {
		if r.Offset != int64(i) {
			t.Fatalf("record %d acknowledged at offset %d", i, r.Offset)
		}
	}
	return recs
}

// rawFetch sends one Fetch (v12, topics by name) for partition 0 at offset
// and returns its error code and the batches it holds.
func rawFetch(t *testing.T, addr, topic string, offset int64, maxBytes int32) (int16, []partition.BatchHeader) {
	t.Helper()
	cl := franzClient(t, addr, kgo.MaxVersions(kversion.V2_8_0()))
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = maxBytes
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("fetch %s at %d: %v", topic, offset, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s at %d: %d topics in the response", topic, offset, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	var hs []partition.BatchHeader
	for b := p.RecordBatches; len(b) > 0; {
		if err := partition.ValidateBatches(b); err != nil {
			t.Fatalf("fetch %s at %d: served a batch that fails its check: %v", topic, offset, err)
		}
		h, _ := recordbatch.ParseHeader(b)
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return p.ErrorCode, hs
}

// consumeExactly reads the first n records of partition 0 with franz-go and
// checks each against what was produced.
func consumeExactly(t *testing.T, addr, topic string, want []testRecord) {
	t.Helper()
	got := franzConsume(t, addr, topic, 0, kgo.NewOffset().At(0), len(want))
	for i, r := range got {
		checkRecord(t, fmt.Sprintf("franz-go read of %s/0", topic), want[i], r.Key, r.Value, fromKgoHeaders(r.Headers), r.Timestamp, r.Offset)
	}
}

// A corrupt length field in a sealed segment (issue 18 4c): the segment is
// trusted across a clean restart, as its index entries lie after the damage,
// so nothing is cut; a consumer from offset 0 with franz-go's default fetch
// gets every record before the damaged batch (it got none), a fetch starting
// at the damaged batch gets KAFKA_STORAGE_ERROR, and the next segment is
// served.
func TestCorruptLengthInSealedSegmentServesBatchesBefore(t *testing.T) {
	n := StartNode(t, WithArgs("--segment-bytes", "16384"))
	topic := uniqueTopic("corrupt-length")
	recs := produceBatches(t, n, topic, 800)
	n.Stop()

	dir := filepath.Join(n.Dir, topic+"-0")
	logs := segmentLogs(t, dir)
	if len(logs) < 3 {
		t.Fatalf("%d segments; the test needs a sealed one after the first", len(logs))
	}
	_, bs := segmentBatches(t, logs[1])
	d := bs[2] // before the segment's first offset index entry (4 KiB in)
	if d.pos+d.h.Size() >= 4096 {
		t.Fatalf("damaged batch ends at %d: past the first index entry", d.pos+d.h.Size())
	}
	var length [4]byte
	binary.BigEndian.PutUint32(length[:], 0x7fffffff)
	writeBytesAt(t, logs[1], d.pos+recordbatch.OffLength, length[:])
	_, next := segmentBatches(t, logs[2])
	n.Start()

	consumeExactly(t, n.KafkaAddr, topic, recs[:d.h.BaseOffset])

	code, hs := rawFetch(t, n.KafkaAddr, topic, 0, 1<<20)
	if code != 0 || len(hs) == 0 || hs[len(hs)-1].LastOffset()+1 != d.h.BaseOffset {
		t.Fatalf("fetch at 0, 1 MiB: code %d, %d batches; want every batch before offset %d", code, len(hs), d.h.BaseOffset)
	}
	for _, off := range []int64{d.h.BaseOffset, d.h.LastOffset()} {
		if code, hs := rawFetch(t, n.KafkaAddr, topic, off, 1<<20); code != kerr.KafkaStorageError.Code || len(hs) != 0 {
			t.Fatalf("fetch at the damaged offset %d: code %d, %d batches; want KAFKA_STORAGE_ERROR", off, code, len(hs))
		}
	}
	if code, hs := rawFetch(t, n.KafkaAddr, topic, next[0].h.BaseOffset, 1<<20); code != 0 || len(hs) == 0 || hs[0].BaseOffset != next[0].h.BaseOffset {
		t.Fatalf("fetch at the next segment's %d: code %d, %d batches", next[0].h.BaseOffset, code, len(hs))
	}
	// Nothing was cut: the segment was trusted, so nothing is quarantined.
	if _, err := os.Stat(filepath.Join(n.Dir, "quarantine")); !os.IsNotExist(err) {
		t.Fatalf("quarantine exists: %v", err)
	}
	if strings.Contains(n.Logs(), "recovery cut") {
		t.Fatal("recovery cut something from a trusted segment")
	}
}

// A flipped payload byte in a sealed segment of a running node (issue 18
// 4d): served as is before a scrub (a client's CRC check rejects it for
// ever); a scrub pass finds it, logs it at ERROR, counts it in
// spool_scrub_corrupt_batches and lists it at /v1/scrub and in `spool scrub`;
// from then on a fetch of it is KAFKA_STORAGE_ERROR while franz-go reads
// every record before it and the batch after it is served.
func TestScrubFindsFlippedPayload(t *testing.T) {
	n := newNode(t, WithArgs("--segment-bytes", "16384", "--scrub-interval", "1h"))
	n.Env = []string{"SPOOL_SCRUB_RATE=50000000"}
	n.Start()
	topic := uniqueTopic("scrubbed")
	recs := produceBatches(t, n, topic, 800)

	dir := filepath.Join(n.Dir, topic+"-0")
	logs := segmentLogs(t, dir)
	if len(logs) < 3 {
		t.Fatalf("%d segments; the test needs two sealed", len(logs))
	}
	b, bs := segmentBatches(t, logs[1])
	d := bs[5]
	last := d.pos + d.h.Size() - 1
	writeBytesAt(t, logs[1], last, []byte{b[last] ^ 0x04})
	var sealed int64
	for _, l := range logs[:len(logs)-1] {
		fi, err := os.Stat(l)
		if err != nil {
			t.Fatal(err)
		}
		sealed += fi.Size()
	}

	// Before a scrub the damaged bytes go out as they are.
	cl := franzClient(t, n.KafkaAddr, kgo.MaxVersions(kversion.V2_8_0()))
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes = -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = d.h.BaseOffset, 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 || partition.ValidateBatches(resp.Topics[0].Partitions[0].RecordBatches) == nil {
		t.Fatalf("before the scrub: want the damaged batch served as is, failing its CRC: %v", err)
	}

	if out, err := Spool(t, "", "scrub", "--start", "--admin", n.AdminAddr); err != nil || !strings.Contains(out, "scrub pass requested") {
		t.Fatalf("spool scrub --start: %v\n%s", err, out)
	}
	var st scrubStatus
	retry.Run(t, 30*time.Second, func() error {
		st = scrubStatus{}
		if err := n.getJSON("/v1/scrub", &st); err != nil {
			return err
		}
		if st.Passes < 1 {
			return fmt.Errorf("no pass finished: %+v", st)
		}
		return nil
	})
	if st.RateBytesPerSec != 50000000 || st.Passes != 1 || st.BytesScrubbed != sealed || st.CorruptBatches != 1 || len(st.Corrupt) != 1 {
		t.Fatalf("scrub status %+v; want rate 50000000 from SPOOL_SCRUB_RATE, one pass over the %d sealed bytes, one finding", st, sealed)
	}
	f := st.Corrupt[0]
	if f.Topic != topic || f.Partition != 0 || f.Segment != logs[1] || f.Position != d.pos || f.Offset != d.h.BaseOffset ||
		f.EndOffset != d.h.LastOffset()+1 || f.Bytes != d.h.Size() || !strings.Contains(f.Reason, "crc") || f.Quarantine != "" || f.FoundAt.IsZero() {
		t.Fatalf("finding %+v; want %s batch at %d, offsets %d-%d", f, logs[1], d.pos, d.h.BaseOffset, d.h.LastOffset())
	}

	metrics := scrapeMetrics(t, n)
	if metrics["spool_scrub_corrupt_batches"] != 1 || metrics["spool_scrub_bytes"] != float64(sealed) {
		t.Fatalf("metrics: corrupt batches %v, bytes %v; want 1, %d", metrics["spool_scrub_corrupt_batches"], metrics["spool_scrub_bytes"], sealed)
	}
	logged := false
	for _, line := range strings.Split(n.Logs(), "\n") {
		if strings.Contains(line, "level=error") && strings.Contains(line, "scrub found a corrupt record batch") &&
			strings.Contains(line, "offset="+strconv.FormatInt(d.h.BaseOffset, 10)) && strings.Contains(line, "segment="+logs[1]) {
			logged = true
		}
	}
	if !logged {
		t.Fatal("no ERROR line names the corrupt batch")
	}
	out, err := Spool(t, "", "scrub", "--admin", n.AdminAddr)
	if err != nil || !strings.Contains(out, topic) || !strings.Contains(out, fmt.Sprintf("%d-%d", d.h.BaseOffset, d.h.LastOffset())) {
		t.Fatalf("spool scrub: %v\n%s", err, out)
	}

	consumeExactly(t, n.KafkaAddr, topic, recs[:d.h.BaseOffset])
	if code, hs := rawFetch(t, n.KafkaAddr, topic, 0, 1<<20); code != 0 || hs[len(hs)-1].LastOffset()+1 != d.h.BaseOffset {
		t.Fatalf("fetch at 0: code %d; want every batch before offset %d", code, d.h.BaseOffset)
	}
	if code, hs := rawFetch(t, n.KafkaAddr, topic, d.h.BaseOffset, 1<<20); code != kerr.KafkaStorageError.Code || len(hs) != 0 {
		t.Fatalf("fetch at the corrupt batch: code %d, %d batches; want KAFKA_STORAGE_ERROR", code, len(hs))
	}
	if code, hs := rawFetch(t, n.KafkaAddr, topic, d.h.LastOffset()+1, 1<<20); code != 0 || len(hs) == 0 || hs[0].BaseOffset != d.h.LastOffset()+1 {
		t.Fatalf("fetch after the corrupt batch: code %d, %d batches", code, len(hs))
	}

	// The finding survives a restart, kill -9 included: before any pass
	// (the first is minutes away) the node lists it and refuses the
	// damaged batch, which it rechecked as the partition opened.
	for _, stop := range []func(){n.Stop, n.Kill} {
		stop()
		n.Start()
		var again scrubStatus
		if err := n.getJSON("/v1/scrub", &again); err != nil {
			t.Fatal(err)
		}
		if again.Passes != 0 || len(again.Corrupt) != 1 || again.Corrupt[0].Position != f.Position || !again.Corrupt[0].FoundAt.Equal(f.FoundAt) {
			t.Fatalf("after a restart: %+v, want no pass yet and the finding %+v", again, f)
		}
		if code, hs := rawFetch(t, n.KafkaAddr, topic, d.h.BaseOffset, 1<<20); code != kerr.KafkaStorageError.Code || len(hs) != 0 {
			t.Fatalf("after a restart, fetch at the corrupt batch: code %d, %d batches; want KAFKA_STORAGE_ERROR", code, len(hs))
		}
		consumeExactly(t, n.KafkaAddr, topic, recs[:d.h.BaseOffset])
	}
}

// scrapeMetrics reads the node's Prometheus text: unlabelled samples by name.
func scrapeMetrics(t testing.TB, n *Node) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + n.AdminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}

// The recovery-point checkpoints lost (the log's own and the data dir's
// shutdown checkpoint, which a clean stop writes) and a byte flipped
// mid-segment (issue 18 4a, 4b): recovery walks every segment and cuts the log at the damaged
// batch; the cut tail and every later segment (offsets must stay
// contiguous) go to DATA/quarantine byte for byte, each with an ERROR line
// naming it; the log ends at the damaged batch and serves all before it.
func TestRecoveryQuarantinesWhatItCuts(t *testing.T) {
	n := StartNode(t, WithArgs("--segment-bytes", "16384"))
	topic := uniqueTopic("recovered")
	recs := produceBatches(t, n, topic, 800)
	n.Stop()

	dir := filepath.Join(n.Dir, topic+"-0")
	logs := segmentLogs(t, dir)
	if len(logs) < 4 {
		t.Fatalf("%d segments; the test needs four", len(logs))
	}
	for _, f := range []string{filepath.Join(dir, "recovery-point-checkpoint"), filepath.Join(n.Dir, "shutdown-checkpoint")} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	b, bs := segmentBatches(t, logs[1])
	d := bs[len(bs)/2]
	mid := d.pos + d.h.Size()/2
	writeBytesAt(t, logs[1], mid, []byte{b[mid] ^ 0x80})
	b[mid] ^= 0x80
	want := map[string][]byte{filepath.Base(logs[1]) + ".tail": b[d.pos:]}
	var moved int64
	for _, l := range logs[2:] {
		lb, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		want[filepath.Base(l)] = lb
		moved += int64(len(lb))
	}
	n.Start()

	qdir := filepath.Join(n.Dir, "quarantine")
	entries, err := os.ReadDir(qdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Fatalf("quarantine holds %d entries, want %d", len(entries), len(want))
	}
	logs2 := n.Logs()
	for _, e := range entries {
		name := e.Name()
		stem, what, ok := strings.Cut(name, "-"+topic+"-0-")
		if _, err := time.Parse("20060102T150405Z", stem); !ok || err != nil {
			t.Fatalf("quarantine entry %q is not <UTC time>-<topic>-0-<file>", name)
		}
		got, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[what]; !ok || string(got) != string(w) {
			t.Fatalf("quarantine %s: %d bytes, want the %d dropped from %s", name, len(got), len(w), what)
		}
		found := false
		for _, line := range strings.Split(logs2, "\n") {
			if strings.Contains(line, "level=error") && strings.Contains(line, "recovery cut") && strings.Contains(line, "quarantine="+filepath.Join(qdir, name)) {
				found = true
			}
		}
		if !found {
			t.Fatalf("no ERROR line names %s", name)
		}
	}
	var st scrubStatus
	if err := n.getJSON("/v1/scrub", &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Quarantined) != len(want) || st.Quarantined[0].Offset != d.h.BaseOffset || st.Quarantined[0].Bytes != int64(len(b))-d.pos {
		t.Fatalf("/v1/scrub quarantined %+v", st.Quarantined)
	}

	ends, err := kadm.NewClient(franzClient(t, n.KafkaAddr)).ListEndOffsets(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != d.h.BaseOffset {
		t.Fatalf("log end %d after recovery, want %d (the damaged batch)", o.Offset, d.h.BaseOffset)
	}
	consumeExactly(t, n.KafkaAddr, topic, recs[:d.h.BaseOffset])
}
