package integration

// kafkajs against a real node, through js/kafkajs.js: admin (createTopics,
// fetchTopicMetadata, fetchTopicOffsets, fetchTopicOffsetsByTimestamp), a
// producer with keys, headers, explicit timestamps and GZIP over several
// partitions, and group consumers (kafkajs has no other kind, so these need
// issue 7's group APIs): read everything, resume from the committed offset
// across a broker restart, re-read what was never committed, and two members
// that share partitions and rebalance when one dies.
//
// kafkajs ships only GZIP among the codecs; snappy, lz4 and zstd need
// third-party packages, so they are covered by the other clients' tests.
// Set SPOOL_KAFKAJS_LOG=DEBUG to log every request kafkajs sends, with its API
// version, on the script's stderr (shown when a test fails).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

const kafkajsScript = "js/kafkajs.js"

// needKafkajs fails (never skips) the test when node or kafkajs is missing.
func needKafkajs(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node not found in PATH (%v): install Node.js (Debian: apt-get install -y nodejs npm), then run npm ci in integration/js", err)
	}
	if _, err := os.Stat(filepath.Join("js", "node_modules", "kafkajs", "package.json")); err != nil {
		t.Fatalf("kafkajs is not installed (%v): run npm ci in integration/js (.ci/run does)", err)
	}
}

// kafkajsCommand is `node js/kafkajs.js command args` bootstrapped at addr.
func kafkajsCommand(ctx context.Context, addr, command string, args any) *exec.Cmd {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err) // test-built arguments always marshal
	}
	cmd := exec.CommandContext(ctx, "node", kafkajsScript, command, string(raw))
	level := os.Getenv("SPOOL_KAFKAJS_LOG")
	if level == "" {
		level = "WARN"
	}
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+addr, "KAFKAJS_LOG="+level)
	return cmd
}

// runKafkajs runs one command of the script (60 s at most) and decodes the
// JSON it prints into out; it fails the test with the script's stderr.
func runKafkajs(t testing.TB, addr, command string, args, out any) {
	t.Helper()
	runKafkajsEnv(t, addr, nil, command, args, out)
}

// runKafkajsEnv is runKafkajs with more environment for the script (its
// KAFKAJS_SSL_CA and KAFKAJS_SASL_* settings).
func runKafkajsEnv(t testing.TB, addr string, env []string, command string, args, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := kafkajsCommand(ctx, addr, command, args)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kafkajs %s timed out after 60s; stdout:\n%s\nstderr:\n%s", command, stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("kafkajs %s %+v: %v; stderr:\n%s", command, args, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("kafkajs %s printed %q: %v; stderr:\n%s", command, stdout.String(), err, stderr.String())
	}
}

// jsMessage is a message as kafkajs' producer takes it and its consumer
// gives it back (strings throughout, as kafkajs represents them).
type jsMessage struct {
	Partition int32             `json:"partition"`
	Offset    string            `json:"offset,omitempty"`
	Timestamp string            `json:"timestamp"`
	Key       string            `json:"key"`
	Value     string            `json:"value"`
	Headers   map[string]string `json:"headers"`
}

// jsPartitionOffset is one entry of fetchTopicOffsets / fetchTopicOffsetsByTimestamp.
type jsPartitionOffset struct {
	Partition int32  `json:"partition"`
	Offset    string `json:"offset"`
	High      string `json:"high,omitempty"`
	Low       string `json:"low,omitempty"`
}

// jsMessages builds n messages for each partition whose timestamps step by a
// second from base; offsets are what the node must assign, counting on from first.
func jsMessages(tag string, partitions int32, n int, first int, base time.Time) []jsMessage {
	var out []jsMessage
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			out = append(out, jsMessage{
				Partition: p,
				Offset:    strconv.Itoa(first + i),
				Timestamp: strconv.FormatInt(base.Add(time.Duration(first+i)*time.Second).UnixMilli(), 10),
				Key:       fmt.Sprintf("key-%s-%d-%d", tag, p, i),
				Value:     fmt.Sprintf("value-%s-%d-%d-%s", tag, p, i, strings.Repeat("kafkajs", 20)),
				Headers:   map[string]string{"tag": tag, "partition": strconv.Itoa(int(p)), "empty": ""},
			})
		}
	}
	return out
}

// kafkajsProduce sends msgs in one producer.send and checks every partition's
// batch was accepted at the offset the messages expect.
func kafkajsProduce(t testing.TB, addr, topic, compression string, msgs []jsMessage) {
	t.Helper()
	send := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		send[i] = map[string]any{"partition": m.Partition, "key": m.Key, "value": m.Value,
			"headers": m.Headers, "timestamp": m.Timestamp}
	}
	var meta []struct {
		TopicName  string `json:"topicName"`
		Partition  int32  `json:"partition"`
		ErrorCode  int    `json:"errorCode"`
		BaseOffset string `json:"baseOffset"`
	}
	runKafkajs(t, addr, "produce", map[string]any{"topic": topic, "compression": compression, "messages": send}, &meta)
	wantBase := map[int32]string{}
	for _, m := range msgs {
		if _, ok := wantBase[m.Partition]; !ok {
			wantBase[m.Partition] = m.Offset
		}
	}
	if len(meta) != len(wantBase) {
		t.Fatalf("produce %s: got metadata for %d partitions, want %d: %+v", compression, len(meta), len(wantBase), meta)
	}
	for _, m := range meta {
		if m.TopicName != topic || m.ErrorCode != 0 || m.BaseOffset != wantBase[m.Partition] {
			t.Fatalf("produce %s: partition %d: got %+v, want error 0 and base offset %s", compression, m.Partition, m, wantBase[m.Partition])
		}
	}
}

// kafkajsConsume reads expect messages with a group consumer and returns
// everything it read (sorted by partition and offset) once it lingered a moment.
func kafkajsConsume(t testing.TB, addr, group, topic string, expect int, autoCommit bool) []jsMessage {
	t.Helper()
	var out struct {
		Messages []jsMessage `json:"messages"`
	}
	runKafkajs(t, addr, "consume", map[string]any{"group": group, "topic": topic, "expect": expect,
		"lingerMs": 500, "autoCommit": autoCommit}, &out)
	sortJSMessages(out.Messages)
	return out.Messages
}

func sortJSMessages(ms []jsMessage) {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].Partition != ms[j].Partition {
			return ms[i].Partition < ms[j].Partition
		}
		oi, _ := strconv.ParseInt(ms[i].Offset, 10, 64)
		oj, _ := strconv.ParseInt(ms[j].Offset, 10, 64)
		return oi < oj
	})
}

func compareJSMessages(t testing.TB, where string, got, want []jsMessage) {
	t.Helper()
	want = append([]jsMessage(nil), want...)
	sortJSMessages(want)
	if len(got) != len(want) {
		t.Fatalf("%s: got %d messages, want %d\ngot:  %+v\nwant: %+v", where, len(got), len(want), got, want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s: message %d:\ngot  %+v\nwant %+v", where, i, got[i], want[i])
		}
	}
}

// TestKafkajsAdminProduceConsume covers the admin calls, a producer with keys,
// headers, timestamps and GZIP over three partitions, and group consumers:
// the whole topic from the beginning, then a resume after a broker restart
// that gets exactly the new messages, and a group that never committed
// reading everything again (at-least-once).
func TestKafkajsAdminProduceConsume(t *testing.T) {
	needKafkajs(t)
	n := StartNode(t, withQuickGroups)
	const partitions = 3
	topic := randomTopic("kafkajs-rt")

	var created struct {
		Created bool `json:"created"`
	}
	runKafkajs(t, n.KafkaAddr, "create-topic", map[string]any{"topic": topic, "partitions": partitions}, &created)
	if !created.Created {
		t.Fatalf("createTopics %s: kafkajs reports it was not created", topic)
	}
	// kafkajs answers false, without an error, for a topic that already exists.
	runKafkajs(t, n.KafkaAddr, "create-topic", map[string]any{"topic": topic, "partitions": partitions}, &created)
	if created.Created {
		t.Fatalf("createTopics %s a second time: kafkajs reports it created it again", topic)
	}

	var md struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions []struct {
				PartitionErrorCode int     `json:"partitionErrorCode"`
				PartitionID        int32   `json:"partitionId"`
				Leader             int32   `json:"leader"`
				Replicas           []int32 `json:"replicas"`
				ISR                []int32 `json:"isr"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	runKafkajs(t, n.KafkaAddr, "metadata", map[string]any{"topic": topic}, &md)
	if len(md.Topics) != 1 || md.Topics[0].Name != topic || len(md.Topics[0].Partitions) != partitions {
		t.Fatalf("fetchTopicMetadata: got %+v, want %s with %d partitions", md, topic, partitions)
	}
	seen := map[int32]bool{}
	for _, p := range md.Topics[0].Partitions {
		id := int32(n.ID)
		if p.PartitionErrorCode != 0 || p.Leader != id || !reflect.DeepEqual(p.Replicas, []int32{id}) || !reflect.DeepEqual(p.ISR, []int32{id}) {
			t.Fatalf("fetchTopicMetadata: partition %+v, want leader, replicas and ISR [%d]", p, id)
		}
		seen[p.PartitionID] = true
	}
	if len(seen) != partitions {
		t.Fatalf("fetchTopicMetadata: partition ids %v, want 0..%d", seen, partitions-1)
	}

	// An hour ago, whole seconds: explicit CreateTime timestamps a second apart.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	plain := jsMessages("plain", partitions, 3, 0, base)
	gzipped := jsMessages("gzip", partitions, 3, 3, base)
	kafkajsProduce(t, n.KafkaAddr, topic, "none", plain)
	kafkajsProduce(t, n.KafkaAddr, topic, "gzip", gzipped)
	all := append(append([]jsMessage(nil), plain...), gzipped...)
	for p := int32(0); p < partitions; p++ {
		if stored := storedCodecs(t, n.Dir, topic, p); stored[0] != 1 || stored[1] != 1 {
			t.Fatalf("partition %d: batches by codec id %v, want one uncompressed and one gzip, stored as sent", p, stored)
		}
	}

	var offsets []jsPartitionOffset
	runKafkajs(t, n.KafkaAddr, "offsets", map[string]any{"topic": topic}, &offsets)
	sort.Slice(offsets, func(i, j int) bool { return offsets[i].Partition < offsets[j].Partition })
	for p := int32(0); p < partitions; p++ {
		want := jsPartitionOffset{Partition: p, Offset: "6", High: "6", Low: "0"}
		if len(offsets) != partitions || offsets[p] != want {
			t.Fatalf("fetchTopicOffsets: got %+v, want %+v for each partition", offsets, want)
		}
	}
	// By time: messages i are at base+i s, so base+2.5 s finds offset 3; a
	// time after every message finds the end (kafkajs maps -1 to the high
	// watermark); a time before every message finds offset 0.
	cases := []struct {
		at   time.Time
		want string
	}{{base.Add(2500 * time.Millisecond), "3"}, {base.Add(2 * time.Hour), "6"}, {base.Add(-time.Hour), "0"}}
	var timestamps []int64
	for _, c := range cases {
		timestamps = append(timestamps, c.at.UnixMilli())
	}
	var byTimes [][]jsPartitionOffset
	runKafkajs(t, n.KafkaAddr, "offsets-by-time", map[string]any{"topic": topic, "timestamps": timestamps}, &byTimes)
	if len(byTimes) != len(cases) {
		t.Fatalf("fetchTopicOffsetsByTimestamp: got %d answers for %d timestamps: %+v", len(byTimes), len(cases), byTimes)
	}
	for i, c := range cases {
		byTime := byTimes[i]
		if len(byTime) != partitions {
			t.Fatalf("fetchTopicOffsetsByTimestamp(%d): got %+v, want %d partitions", c.at.UnixMilli(), byTime, partitions)
		}
		for _, o := range byTime {
			if o.Offset != c.want {
				t.Fatalf("fetchTopicOffsetsByTimestamp(%d): got %+v, want offset %s on every partition", c.at.UnixMilli(), byTime, c.want)
			}
		}
	}

	group := randomTopic("kafkajs-group")
	compareJSMessages(t, "group consumer from the beginning",
		kafkajsConsume(t, n.KafkaAddr, group, topic, len(all), true), all)

	// The group committed; the broker restarts; more messages arrive. The
	// same group resumes at its committed offsets: the new messages, nothing else.
	n.Stop()
	n.Start()
	more := jsMessages("more", partitions, 2, 6, base)
	kafkajsProduce(t, n.KafkaAddr, topic, "gzip", more)
	compareJSMessages(t, "group consumer resuming after a broker restart",
		kafkajsConsume(t, n.KafkaAddr, group, topic, len(more), true), more)

	// A consumer that read everything but never committed: the next member
	// of its group reads everything again.
	all = append(all, more...)
	uncommitted := randomTopic("kafkajs-uncommitted")
	compareJSMessages(t, "group consumer without commits",
		kafkajsConsume(t, n.KafkaAddr, uncommitted, topic, len(all), false), all)
	compareJSMessages(t, "same group after a run without commits",
		kafkajsConsume(t, n.KafkaAddr, uncommitted, topic, len(all), true), all)
}

// jsMember is a long-running kafkajs group member (`kafkajs.js member`).
type jsMember struct {
	*bgProcess
	topic string
}

type jsEvent struct {
	Event      string  `json:"event"`
	MemberID   string  `json:"memberId"`
	Assignment []int32 `json:"assignment"`
	jsMessage
}

func startJSMember(t testing.TB, addr, name, group, topic string) *jsMember {
	t.Helper()
	cmd := kafkajsCommand(context.Background(), addr, "member", map[string]any{"group": group, "topic": topic})
	return &jsMember{bgProcess: startBackground(t, "kafkajs member "+name, cmd), topic: topic}
}

func (m *jsMember) events() []jsEvent {
	var out []jsEvent
	for _, l := range m.Lines() {
		var e jsEvent
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			m.t.Errorf("%s printed %q: %v", m.name, l, err)
			continue
		}
		out = append(out, e)
	}
	return out
}

// assignment is the member's latest assignment (sorted), and whether it has joined.
func (m *jsMember) assignment() ([]int32, bool) {
	var parts []int32
	joined := false
	for _, e := range m.events() {
		if e.Event == "join" {
			parts, joined = append([]int32(nil), e.Assignment...), true
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	return parts, joined
}

// values maps every value the member read to its partition.
func (m *jsMember) values() map[string]int32 {
	out := map[string]int32{}
	for _, e := range m.events() {
		if e.Event == "message" {
			out[e.Value] = e.Partition
		}
	}
	return out
}

// TestKafkajsGroupRebalance runs two kafkajs members in one group: they split
// four partitions, each reads only its own, and when one dies (SIGKILL, no
// leave) the survivor is given all four once the session times out and reads
// every message, the dead member's unread ones included.
func TestKafkajsGroupRebalance(t *testing.T) {
	needKafkajs(t)
	n := StartNode(t, withQuickGroups)
	const partitions = 4
	topic := randomTopic("kafkajs-rebal")
	createTopicForTest(t, n.KafkaAddr, topic, partitions)
	group := randomTopic("kafkajs-rebal-group")
	all := []int32{0, 1, 2, 3}
	base := time.Now().Add(-time.Minute).Truncate(time.Second)

	a := startJSMember(t, n.KafkaAddr, "a", group, topic)
	retry.Run(t, 30*time.Second, func() error {
		a.mustRun()
		if got, _ := a.assignment(); !reflect.DeepEqual(got, all) {
			return fmt.Errorf("member a alone: assigned %v, want %v", got, all)
		}
		return nil
	})
	b := startJSMember(t, n.KafkaAddr, "b", group, topic)
	var aParts, bParts []int32
	retry.Run(t, 30*time.Second, func() error {
		a.mustRun()
		b.mustRun()
		aParts, _ = a.assignment()
		bParts, _ = b.assignment()
		union := append(append([]int32(nil), aParts...), bParts...)
		sort.Slice(union, func(i, j int) bool { return union[i] < union[j] })
		if len(aParts) == 0 || len(bParts) == 0 || !reflect.DeepEqual(union, all) {
			return fmt.Errorf("two members: a assigned %v, b assigned %v; want a split of %v", aParts, bParts, all)
		}
		return nil
	})

	owner := map[int32]*jsMember{}
	for _, p := range aParts {
		owner[p] = a
	}
	for _, p := range bParts {
		owner[p] = b
	}
	before := jsMessages("before", partitions, 2, 0, base)
	kafkajsProduce(t, n.KafkaAddr, topic, "none", before)
	retry.Run(t, 20*time.Second, func() error {
		for _, m := range before {
			if p, ok := owner[m.Partition].values()[m.Value]; !ok || p != m.Partition {
				return fmt.Errorf("%s of partition %d not yet read by its owner", m.Value, m.Partition)
			}
		}
		return nil
	})
	for _, m := range before {
		for _, other := range []*jsMember{a, b} {
			if other != owner[m.Partition] {
				if _, ok := other.values()[m.Value]; ok {
					t.Fatalf("%s of partition %d read by a member not assigned it", m.Value, m.Partition)
				}
			}
		}
	}

	// b dies without leaving; the coordinator expires it after its 6 s
	// session and a is given every partition, starting at b's committed
	// offsets (or earlier: at-least-once), so a reads every later message.
	b.signal(syscall.SIGKILL)
	retry.Run(t, 30*time.Second, func() error {
		a.mustRun()
		if got, _ := a.assignment(); !reflect.DeepEqual(got, all) {
			return fmt.Errorf("after b died: a assigned %v, want %v", got, all)
		}
		return nil
	})
	after := jsMessages("after", partitions, 2, 2, base)
	kafkajsProduce(t, n.KafkaAddr, topic, "gzip", after)
	retry.Run(t, 20*time.Second, func() error {
		got := a.values()
		for _, m := range after {
			if p, ok := got[m.Value]; !ok || p != m.Partition {
				return fmt.Errorf("%s of partition %d not yet read by the surviving member", m.Value, m.Partition)
			}
		}
		return nil
	})
	// Nothing was skipped: every message before the death was read by a or b.
	for _, m := range before {
		_, byA := a.values()[m.Value]
		_, byB := b.values()[m.Value]
		if !byA && !byB {
			t.Fatalf("%s of partition %d was never read", m.Value, m.Partition)
		}
	}
}
