package integration

// kcat (librdkafka) against a real node: produce with keys, headers and every
// compression codec to chosen partitions, consume from the beginning, from an
// offset, from the end backwards and by time with an exact round trip,
// metadata as JSON, and a balanced consumer group (-G, issue 7).
//
// librdkafka negotiates its own API versions (it sends Fetch v12 and the
// newest ApiVersions); set SPOOL_KCAT_DEBUG=protocol,broker to pass
// `-X debug=...` to every kcat run when diagnosing a failure.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
)

// kcatCodecs are the values of kcat's -z, by the codec id a RecordBatch's
// attributes carry for them.
var kcatCodecs = []struct {
	name string
	id   int
}{{"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// kcatFieldSep and kcatRecordSep delimit kcat -f output; no test data contains them.
const (
	kcatFieldSep  = "\x1f"
	kcatRecordSep = "\x1e"
	// kcatFormat prints every field a round trip compares, lengths included so
	// an empty key or value is told apart from a missing one.
	kcatFormat = "%t" + kcatFieldSep + "%p" + kcatFieldSep + "%o" + kcatFieldSep + "%T" + kcatFieldSep +
		"%K" + kcatFieldSep + "%k" + kcatFieldSep + "%S" + kcatFieldSep + "%s" + kcatFieldSep + "%h" + kcatRecordSep
)

// kcatRecord is one record as kcat printed it, or as a test expects it.
type kcatRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
	Key       string
	Value     string
	Headers   string // kcat's %h: k=v pairs joined by commas, in record order
}

// needKcat fails (never skips) the test when kcat is missing.
func needKcat(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat not found in PATH (%v): install kcat (Debian/Ubuntu: apt-get install -y kcat); .ci/run installs it", err)
	}
}

// kcatArgs are the options every kcat run gets: short socket and delivery
// timeouts, so a broker that does not answer fails the test in seconds.
func kcatArgs(addr string) []string {
	args := []string{"-b", addr,
		"-X", "socket.timeout.ms=10000",
		"-X", "metadata.max.age.ms=5000",
	}
	if dbg := os.Getenv("SPOOL_KCAT_DEBUG"); dbg != "" {
		args = append(args, "-X", "debug="+dbg)
	}
	return args
}

// runKcat runs kcat to completion (30 s at most) and returns its stdout; it
// fails the test with kcat's stderr if kcat fails or reports a delivery error.
func runKcat(t testing.TB, addr, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append(kcatArgs(addr), args...)
	if len(args) > 0 && args[0] == "-P" {
		full = append(full, "-X", "message.timeout.ms=15000")
	}
	cmd := exec.CommandContext(ctx, "kcat", full...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kcat %q timed out after 30s; stderr:\n%s", args, stderr.String())
	}
	if err != nil {
		t.Fatalf("kcat %q: %v; stderr:\n%s", args, err, stderr.String())
	}
	if strings.Contains(stderr.String(), "Delivery failed") || strings.Contains(stderr.String(), "% ERROR") {
		t.Fatalf("kcat %q reported errors:\n%s", args, stderr.String())
	}
	return stdout.String()
}

// parseKcatRecords parses output printed with kcatFormat.
func parseKcatRecords(t testing.TB, out string) []kcatRecord {
	t.Helper()
	var recs []kcatRecord
	for _, raw := range strings.Split(out, kcatRecordSep) {
		raw = strings.TrimPrefix(raw, "\n")
		if raw == "" {
			continue
		}
		f := strings.Split(raw, kcatFieldSep)
		if len(f) != 9 {
			t.Fatalf("kcat printed %q: want 9 fields, got %d", raw, len(f))
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		ts, err3 := strconv.ParseInt(f[3], 10, 64)
		klen, err4 := strconv.Atoi(f[4])
		vlen, err5 := strconv.Atoi(f[6])
		if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
			t.Fatalf("kcat printed %q: %v", raw, err)
		}
		// kcat prints a null key or value as length -1 and an empty string.
		if klen != len(f[5]) && !(klen == -1 && f[5] == "") || vlen != len(f[7]) && !(vlen == -1 && f[7] == "") {
			t.Fatalf("kcat printed %q: key or value length disagrees with its bytes", raw)
		}
		recs = append(recs, kcatRecord{Topic: f[0], Partition: int32(p), Offset: off, Timestamp: ts,
			Key: f[5], Value: f[7], Headers: f[8]})
	}
	return recs
}

// kcatConsume reads partition p from the given -o offset spec until the end (-e).
func kcatConsume(t testing.TB, addr, topic string, p int32, offset string, extra ...string) []kcatRecord {
	t.Helper()
	args := append([]string{"-C", "-t", topic, "-p", strconv.Itoa(int(p)), "-o", offset, "-e", "-q", "-f", kcatFormat}, extra...)
	return parseKcatRecords(t, runKcat(t, addr, "", args...))
}

// compareKcatRecords checks got against want field by field, timestamps
// included (the caller fills in the expected ones).
func compareKcatRecords(t testing.TB, where string, got, want []kcatRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d records, want %d\ngot:  %+v\nwant: %+v", where, len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: record %d:\ngot  %+v\nwant %+v", where, i, got[i], want[i])
		}
	}
}

// createTopicForTest creates a topic through franz-go's admin client, so that a
// test of another client starts from a topic that client did not make.
func createTopicForTest(t testing.TB, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(3))
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s with %d partitions: %v", topic, partitions, err)
	}
}

func randomTopic(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// storedCodecs reads a partition's segment files and counts its record
// batches by compression codec (attributes & 7): the node must store each
// batch exactly as the producer compressed it.
func storedCodecs(t testing.TB, dataDir, topic string, p int32) map[int]int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p), "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("segment files of %s-%d under %s: %v (found %d)", topic, p, dataDir, err, len(logs))
	}
	codecs := map[int]int{}
	for _, name := range logs {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("read segment: %v", err)
		}
		for pos := 0; pos < len(data); {
			h, err := recordbatch.ParseHeader(data[pos:])
			if err != nil || h.Magic != recordbatch.Magic || h.Length < recordbatch.MinLength || int64(pos)+h.Size() > int64(len(data)) {
				t.Fatalf("%s: bad batch at %d (%+v, file %d): %v", name, pos, h, len(data), err)
			}
			codecs[h.Compression()]++
			pos += int(h.Size())
		}
	}
	return codecs
}

// TestKcatProduceConsume produces with every codec to several partitions,
// keyed and with headers, and reads everything back exactly, from the
// beginning, from offsets, from the end backwards and by timestamp.
func TestKcatProduceConsume(t *testing.T) {
	needKcat(t)
	n := StartNode(t)
	const partitions = 3
	const perBatch = 4
	topic := randomTopic("kcat-rt")
	createTopicForTest(t, n.KafkaAddr, topic, partitions)

	want := make([][]kcatRecord, partitions)
	// bounds[p][i] is the wall-clock window in which record i of p was produced.
	type window struct{ from, to int64 }
	bounds := make([][]window, partitions)
	padding := strings.Repeat("spool", 40) // compressible, so every codec really compresses
	for _, codec := range kcatCodecs {
		for p := int32(0); p < partitions; p++ {
			var in strings.Builder
			var batch []kcatRecord
			for i := 0; i < perBatch; i++ {
				key := fmt.Sprintf("key-%s-%d-%d", codec.name, p, i)
				value := fmt.Sprintf("value-%s-%d-%d-%s", codec.name, p, i, padding)
				fmt.Fprintf(&in, "%s|%s\n", key, value)
				batch = append(batch, kcatRecord{Topic: topic, Partition: p, Offset: int64(len(want[p]) + i),
					Key: key, Value: value,
					// kcat prints headers in record order; a repeated key stays repeated.
					Headers: fmt.Sprintf("codec=%s,dup=one,dup=two,eq=a=b,partition=%d", codec.name, p)})
			}
			from := time.Now().UnixMilli()
			runKcat(t, n.KafkaAddr, in.String(), "-P", "-t", topic, "-p", strconv.Itoa(int(p)), "-K", "|",
				"-z", codec.name, "-X", "linger.ms=50",
				"-H", "codec="+codec.name, "-H", "dup=one", "-H", "dup=two", "-H", "eq=a=b",
				"-H", fmt.Sprintf("partition=%d", p))
			to := time.Now().UnixMilli()
			want[p] = append(want[p], batch...)
			for range batch {
				bounds[p] = append(bounds[p], window{from, to})
			}
		}
	}

	// From the beginning: everything, in order, with CreateTime timestamps
	// inside the window in which kcat produced them.
	got := make([][]kcatRecord, partitions)
	for p := int32(0); p < partitions; p++ {
		got[p] = kcatConsume(t, n.KafkaAddr, topic, p, "beginning")
		if len(got[p]) != len(want[p]) {
			t.Fatalf("partition %d from beginning: got %d records, want %d: %+v", p, len(got[p]), len(want[p]), got[p])
		}
		for i := range want[p] {
			ts := got[p][i].Timestamp
			if w := bounds[p][i]; ts < w.from || ts > w.to {
				t.Fatalf("partition %d offset %d: timestamp %d outside the produce window [%d, %d]", p, i, ts, w.from, w.to)
			}
			want[p][i].Timestamp = ts
		}
		compareKcatRecords(t, fmt.Sprintf("partition %d from beginning", p), got[p], want[p])
	}

	// Each codec's batches are stored as sent. librdkafka decides from
	// ApiVersions whether it may compress: it sends gzip, snappy and lz4
	// uncompressed unless the broker advertises Produce v0 (lz4 also wants
	// FindCoordinator v0), and zstd unless Produce v7 and Fetch v10.
	for p := int32(0); p < partitions; p++ {
		stored := storedCodecs(t, n.Dir, topic, p)
		var missing []string
		for _, codec := range kcatCodecs {
			if stored[codec.id] == 0 {
				missing = append(missing, codec.name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("partition %d: no batch stored compressed with %v (batches by codec id: %v); "+
				"if kcat -X debug=msg logs \"Broker does not support compression type\", "+
				"the node's ApiVersions made librdkafka send them uncompressed", p, missing, stored)
		}
	}

	// From an absolute offset, with and without a count.
	compareKcatRecords(t, "partition 1 from offset 7", kcatConsume(t, n.KafkaAddr, topic, 1, "7"), want[1][7:])
	compareKcatRecords(t, "partition 2 from offset 5, 3 records",
		kcatConsume(t, n.KafkaAddr, topic, 2, "5", "-c", "3"), want[2][5:8])
	// From the end backwards.
	compareKcatRecords(t, "partition 0 last 6", kcatConsume(t, n.KafkaAddr, topic, 0, "-6"), want[0][len(want[0])-6:])

	// By time: the first record whose timestamp is at or after T, then
	// everything after it; nothing when T is after every record.
	for p := int32(0); p < partitions; p++ {
		ts := want[p][9].Timestamp
		first := 0
		for first < len(want[p]) && want[p][first].Timestamp < ts {
			first++
		}
		compareKcatRecords(t, fmt.Sprintf("partition %d from time %d", p, ts),
			kcatConsume(t, n.KafkaAddr, topic, p, fmt.Sprintf("s@%d", ts)), want[p][first:])
	}
	future := time.Now().Add(time.Hour).UnixMilli()
	compareKcatRecords(t, "partition 0 from a time after every record",
		kcatConsume(t, n.KafkaAddr, topic, 0, fmt.Sprintf("s@%d", future)), nil)

	// Null and empty keys and values stay apart: -Z sends an empty key and
	// value as null, and kcat's JSON output tells null from empty. (kcat
	// skips empty input lines, so each record here is a lone delimiter.)
	runKcat(t, n.KafkaAddr, "|\n", "-P", "-t", topic, "-p", "0", "-K", "|", "-Z")
	runKcat(t, n.KafkaAddr, "|\n", "-P", "-t", topic, "-p", "0", "-K", "|")
	out := runKcat(t, n.KafkaAddr, "", "-C", "-t", topic, "-p", "0", "-o", strconv.Itoa(len(want[0])), "-e", "-q", "-J")
	type jsonRecord struct {
		Key     *string `json:"key"`
		Payload *string `json:"payload"`
	}
	var tail []jsonRecord
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var m jsonRecord
		if err := dec.Decode(&m); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("kcat -J output %q: %v", out, err)
		}
		tail = append(tail, m)
	}
	if len(tail) != 2 {
		t.Fatalf("kcat -J read %d records after offset %d, want 2: %s", len(tail), len(want[0]), out)
	}
	if tail[0].Key != nil || tail[0].Payload != nil {
		t.Errorf("record produced with -Z: want null key and value, got %s", out)
	}
	if tail[1].Key == nil || *tail[1].Key != "" || tail[1].Payload == nil || *tail[1].Payload != "" {
		t.Errorf("record with empty key and value: got %s", out)
	}
}

// TestKcatMetadata checks `kcat -L -J`: the node as the only broker at its
// advertised address, and every partition of a topic led by it.
func TestKcatMetadata(t *testing.T) {
	needKcat(t)
	n := StartNode(t)
	topic := randomTopic("kcat-md")
	createTopicForTest(t, n.KafkaAddr, topic, 5)

	var md struct {
		OriginatingBroker struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"originating_broker"`
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Partition int32  `json:"partition"`
				Leader    int32  `json:"leader"`
				Error     string `json:"error"`
				Replicas  []struct {
					ID int32 `json:"id"`
				} `json:"replicas"`
				ISRs []struct {
					ID int32 `json:"id"`
				} `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	out := runKcat(t, n.KafkaAddr, "", "-L", "-J", "-t", topic)
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J printed %q: %v", out, err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != int32(n.ID) || md.Brokers[0].Name != n.KafkaAddr {
		t.Fatalf("brokers: got %+v, want one broker id %d at %s\n%s", md.Brokers, n.ID, n.KafkaAddr, out)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != topic || md.Topics[0].Error != "" {
		t.Fatalf("topics: got %+v, want %s without error\n%s", md.Topics, topic, out)
	}
	parts := md.Topics[0].Partitions
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	if len(parts) != 5 {
		t.Fatalf("topic %s: got %d partitions, want 5\n%s", topic, len(parts), out)
	}
	for i, p := range parts {
		if p.Partition != int32(i) || p.Leader != int32(n.ID) || p.Error != "" ||
			len(p.Replicas) != 1 || p.Replicas[0].ID != int32(n.ID) || len(p.ISRs) != 1 || p.ISRs[0].ID != int32(n.ID) {
			t.Fatalf("partition %d: got %+v, want leader, replica and ISR %d\n%s", i, p, n.ID, out)
		}
	}

	// Without -t: the whole cluster, the topic among the others.
	all := runKcat(t, n.KafkaAddr, "", "-L", "-J")
	if !strings.Contains(all, `"topic":"`+topic+`"`) {
		t.Fatalf("kcat -L -J without -t does not list %s:\n%s", topic, all)
	}
}

// kcatProduceEach produces one record (value "<tag>-<p>") to each partition.
func kcatProduceEach(t testing.TB, addr, topic string, partitions int32, tag string) []string {
	t.Helper()
	var values []string
	for p := int32(0); p < partitions; p++ {
		v := fmt.Sprintf("%s-%d", tag, p)
		runKcat(t, addr, v+"\n", "-P", "-t", topic, "-p", strconv.Itoa(int(p)))
		values = append(values, v)
	}
	return values
}

// withQuickGroups starts the node with no initial rebalance delay (Kafka's
// group.initial.rebalance.delay.ms, 3 s by default), so that each group a
// test forms is ready at once instead of waiting for more members.
func withQuickGroups(n *Node) {
	n.Env = append(n.Env, "SPOOL_GROUP_INITIAL_REBALANCE_DELAY=0s")
}

// kcatGroupArgs are a balanced consumer's options: start from the earliest
// offset when the group has none, short session timeout, quick heartbeats.
func kcatGroupArgs(group string) []string {
	return []string{"-G", group,
		"-X", "auto.offset.reset=earliest",
		"-X", "session.timeout.ms=6000",
		"-X", "heartbeat.interval.ms=500",
		"-X", "fetch.wait.max.ms=200",
	}
}

// TestKcatConsumerGroup reads a topic through a group (kcat -G), then reads
// it again after more records arrived and the broker restarted: the second
// run starts at the committed offsets, so it gets exactly the new records.
func TestKcatConsumerGroup(t *testing.T) {
	needKcat(t)
	n := StartNode(t, withQuickGroups)
	const partitions = 3
	topic := randomTopic("kcat-grp")
	createTopicForTest(t, n.KafkaAddr, topic, partitions)
	group := randomTopic("kcat-group")

	var first []string
	for i := 0; i < 4; i++ {
		first = append(first, kcatProduceEach(t, n.KafkaAddr, topic, partitions, fmt.Sprintf("first%d", i))...)
	}
	read := func() []string {
		// -e: stop once every assigned partition is at its end; closing the
		// consumer commits what it read.
		args := append(kcatGroupArgs(group), "-e", "-f", "%s\n", topic)
		out := runKcat(t, n.KafkaAddr, "", args...)
		values := strings.Fields(out)
		sort.Strings(values)
		return values
	}
	sort.Strings(first)
	if got := read(); !reflect.DeepEqual(got, first) {
		t.Fatalf("first group read: got %q, want %q", got, first)
	}

	n.Stop()
	n.Start()
	var second []string
	for i := 0; i < 2; i++ {
		second = append(second, kcatProduceEach(t, n.KafkaAddr, topic, partitions, fmt.Sprintf("second%d", i))...)
	}
	sort.Strings(second)
	if got := read(); !reflect.DeepEqual(got, second) {
		t.Fatalf("group read after commit and broker restart: got %q, want exactly the new records %q", got, second)
	}
}

// bgProcess is a long-running client process whose output lines a test
// watches while it runs.
type bgProcess struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *lockedBuffer

	mu    sync.Mutex
	lines []string
}

// startBackground starts cmd and collects its stdout lines; the process is
// killed when the test ends if it is still running.
func startBackground(t testing.TB, name string, cmd *exec.Cmd) *bgProcess {
	t.Helper()
	p := &bgProcess{t: t, name: name, cmd: cmd, done: make(chan struct{}), stderr: &lockedBuffer{}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		if t.Failed() {
			t.Logf("--- %s stdout ---\n%s\n--- %s stderr ---\n%s", name, strings.Join(p.Lines(), "\n"), name, p.stderr.String())
		}
	})
	return p
}

// mustRun fails the test at once if the process has exited: a member that
// died cannot satisfy what the test is waiting for.
func (p *bgProcess) mustRun() {
	p.t.Helper()
	select {
	case <-p.done:
		p.t.Fatalf("%s exited early (%v)", p.name, p.cmd.ProcessState)
	default:
	}
}

// Lines returns the stdout lines printed so far.
func (p *bgProcess) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// signal sends sig and waits (10 s at most) for the process to exit.
func (p *bgProcess) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("%s did not exit %v after 10s; killing", p.name, sig)
		p.cmd.Process.Kill()
		<-p.done
	}
}

// kcatAssignment returns the partitions kcat last reported as assigned to
// it (its rebalance callback prints "... assigned: topic [0], topic [2]"),
// and whether it reported any.
func kcatAssignment(p *bgProcess, topic string) ([]int32, bool) {
	lines := strings.Split(p.stderr.String(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		_, list, ok := strings.Cut(lines[i], "rebalanced")
		if !ok {
			continue
		}
		if _, assigned, ok := strings.Cut(list, "assigned: "); ok {
			var parts []int32
			for _, item := range strings.Split(assigned, ",") {
				item = strings.TrimSpace(item)
				var p int32
				if _, err := fmt.Sscanf(item, topic+" [%d]", &p); err == nil {
					parts = append(parts, p)
				}
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			return parts, true
		}
		return nil, true // revoked: nothing assigned until the next assignment
	}
	return nil, false
}

// kcatValues returns the values of records a member printed as "partition value".
func kcatValues(p *bgProcess) map[string]int32 {
	out := map[string]int32{}
	for _, l := range p.Lines() {
		var part int32
		var v string
		if _, err := fmt.Sscanf(l, "%d %s", &part, &v); err == nil {
			out[v] = part
		}
	}
	return out
}

// TestKcatGroupRebalance runs two balanced consumers in one group: they split
// the partitions between them, each reads only its own, and when one leaves
// the other takes over all partitions and reads what arrives on them.
func TestKcatGroupRebalance(t *testing.T) {
	needKcat(t)
	n := StartNode(t, withQuickGroups)
	const partitions = 4
	topic := randomTopic("kcat-rebal")
	createTopicForTest(t, n.KafkaAddr, topic, partitions)
	group := randomTopic("kcat-rebal-group")

	member := func(name string) *bgProcess {
		args := append(kcatArgs(n.KafkaAddr), kcatGroupArgs(group)...)
		args = append(args, "-u", "-f", "%p %s\n", topic) // -u: unbuffered, lines show as they are read
		return startBackground(t, "kcat member "+name, exec.Command("kcat", args...))
	}
	all := []int32{0, 1, 2, 3}

	a := member("a")
	retry.Run(t, 20*time.Second, func() error {
		a.mustRun()
		if got, _ := kcatAssignment(a, topic); !reflect.DeepEqual(got, all) {
			return fmt.Errorf("member a alone: assigned %v, want %v\n%s", got, all, a.stderr.String())
		}
		return nil
	})

	b := member("b")
	var aParts, bParts []int32
	retry.Run(t, 30*time.Second, func() error {
		a.mustRun()
		b.mustRun()
		aParts, _ = kcatAssignment(a, topic)
		bParts, _ = kcatAssignment(b, topic)
		union := append(append([]int32(nil), aParts...), bParts...)
		sort.Slice(union, func(i, j int) bool { return union[i] < union[j] })
		if len(aParts) == 0 || len(bParts) == 0 || !reflect.DeepEqual(union, all) {
			return fmt.Errorf("two members: a assigned %v, b assigned %v; want a split of %v", aParts, bParts, all)
		}
		return nil
	})

	// Each record goes to the member that owns its partition.
	owner := map[int32]*bgProcess{}
	for _, p := range aParts {
		owner[p] = a
	}
	for _, p := range bParts {
		owner[p] = b
	}
	before := kcatProduceEach(t, n.KafkaAddr, topic, partitions, "before")
	retry.Run(t, 20*time.Second, func() error {
		for p, v := range before {
			if got, ok := kcatValues(owner[int32(p)])[v]; !ok || got != int32(p) {
				return fmt.Errorf("record %s of partition %d not yet read by its owner", v, p)
			}
		}
		return nil
	})
	for p, v := range before {
		for _, other := range []*bgProcess{a, b} {
			if other != owner[int32(p)] {
				if _, ok := kcatValues(other)[v]; ok {
					t.Fatalf("record %s of partition %d read by a member that was not assigned it", v, p)
				}
			}
		}
	}

	// b leaves (SIGTERM: kcat closes the consumer, committing and leaving the
	// group); a takes over every partition and reads the records that follow.
	b.signal(syscall.SIGTERM)
	retry.Run(t, 30*time.Second, func() error {
		a.mustRun()
		if got, _ := kcatAssignment(a, topic); !reflect.DeepEqual(got, all) {
			return fmt.Errorf("after b left: a assigned %v, want %v", got, all)
		}
		return nil
	})
	after := kcatProduceEach(t, n.KafkaAddr, topic, partitions, "after")
	retry.Run(t, 20*time.Second, func() error {
		got := kcatValues(a)
		for p, v := range after {
			if gp, ok := got[v]; !ok || gp != int32(p) {
				return fmt.Errorf("record %s of partition %d not yet read by the remaining member", v, p)
			}
		}
		return nil
	})
}
