package integration

// All five clients through a leader failover (issue 14): franz-go, sarama,
// kafka-go, kcat (librdkafka) and kafkajs each keep one producer, with the
// client's default retries, across a kill -9 of their partition's leader
// (R=3 on 3 nodes), then read the partition back from its start while the
// killed node rejoins (and may take its leadership back), across the
// entries Raft commits of its own at every leader change (kept out of the
// Kafka offsets by raftlog, since kafka-go would hand a control record to
// the application). The history checker proves every acknowledged record is
// read back once, at its offset, and nothing else is read.
//
// Produce rounds are sequential and none is in flight when the leader is
// killed, so a client without idempotence cannot duplicate a record that
// was committed but not answered: a duplicate is the broker's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/integration/history"
)

// sent is what a client said about one value.
type sent struct {
	offset int64 // -1: acknowledged, offset not reported
	err    error
}

// got is one record a client read back.
type got struct {
	offset int64
	value  string
}

// failoverClient drives one client against partition 0 of one topic.
type failoverClient struct {
	// produce sends values with acks=all in one call of the client.
	produce func(values []string) []sent
	// read reads the partition from its start until it has read offset
	// until (or, for a client that reports no offsets, until it has read
	// at least count records).
	read  func(until int64, count int) ([]got, error)
	close func()
}

func TestReplicationClientsFailover(t *testing.T) {
	needKcat(t)
	needKafkajs(t)
	nodes := startCluster(t, 3, withQuickGroups)
	seeds := kafkaAddrs(nodes)
	for _, c := range []struct {
		name string
		open func(t *testing.T, seeds []string, topic string) *failoverClient
	}{
		{"franz-go", franzFailover},
		{"sarama", saramaFailover},
		{"kafka-go", kafkaGoFailover},
		{"kcat", kcatFailover},
		{"kafkajs", kafkajsFailover},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := uniqueTopic("failover-" + c.name)
			createReplicatedTopic(t, nodes, topic, 1, 3)
			cl := c.open(t, seeds, topic)
			defer cl.close()
			clientThroughFailover(t, nodes, topic, c.name, cl)
		})
	}
}

func clientThroughFailover(t *testing.T, nodes []*Node, topic, name string, cl *failoverClient) {
	h := history.New()
	acked := 0
	round := func(tag string) error {
		var values []string
		for i := 0; i < 20; i++ {
			v := fmt.Sprintf("%s-%s-%02d", name, tag, i)
			values = append(values, v)
			h.Send(name, v)
		}
		var errs []error
		for i, s := range cl.produce(values) {
			if s.err != nil {
				h.Failed(values[i], s.err, false)
				errs = append(errs, s.err)
				continue
			}
			h.Acked(values[i], 0, s.offset)
			acked++
		}
		return errors.Join(errs...)
	}
	if err := round("before"); err != nil {
		t.Fatalf("%s: produce before the failover: %v", name, err)
	}
	leader := waitLeader(t, nodes, topic, 0, -1, replStep)
	leader.Kill()
	t.Logf("%s: killed node %d, leader of %s/0", name, leader.ID, topic)
	failed := 0
	deadline := time.Now().Add(2 * replStep)
	for r := 0; ; r++ {
		err := round(fmt.Sprintf("after%d", r))
		if err == nil {
			break
		}
		failed++
		t.Logf("%s: round %d after the kill failed: %v", name, r, err)
		if time.Now().After(deadline) {
			t.Fatalf("%s: no produce succeeded within %v of the leader's kill", name, 2*replStep)
		}
	}
	next := waitLeader(t, except(nodes, leader), topic, 0, int32(leader.ID), replStep)
	t.Logf("%s: node %d leads %s/0; %d produce rounds failed before one succeeded", name, next.ID, topic, failed)
	leader.Start()
	if err := round("rejoined"); err != nil {
		t.Logf("%s: round after node %d rejoined failed: %v", name, leader.ID, err)
	}

	until := int64(-1)
	for _, o := range h.AckedOffsets(0) {
		until = max(until, o)
	}
	recs, err := cl.read(until, acked)
	if err != nil {
		t.Fatalf("%s: read back: %v", name, err)
	}
	for _, r := range recs {
		h.Read(0, r.offset, r.value)
	}
	res := h.Check()
	t.Logf("%s: history: %s", name, res)
	if !res.OK() || res.Checked != res.Acked || res.Acked == 0 {
		t.Errorf("%s through a failover: %s", name, res.Report())
	}
}

func franzFailover(t *testing.T, seeds []string, topic string) *failoverClient {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatalf("franz-go client: %v", err)
	}
	return &failoverClient{
		produce: func(values []string) []sent {
			recs := make([]*kgo.Record, len(values))
			for i, v := range values {
				recs[i] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}
			}
			ctx, cancel := context.WithTimeout(context.Background(), replStep)
			defer cancel()
			out := make([]sent, len(values))
			for i, r := range cl.ProduceSync(ctx, recs...) {
				out[i] = sent{offset: r.Record.Offset, err: r.Err}
			}
			return out
		},
		read: func(until int64, _ int) ([]got, error) {
			rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
			if err != nil {
				return nil, err
			}
			defer rd.Close()
			ctx, cancel := context.WithTimeout(context.Background(), replStep)
			defer cancel()
			var out []got
			for len(out) == 0 || out[len(out)-1].offset < until {
				fs := rd.PollFetches(ctx)
				if ctx.Err() != nil {
					return out, fmt.Errorf("read %d records, not up to offset %d: %w", len(out), until, ctx.Err())
				}
				for _, r := range fs.Records() {
					out = append(out, got{r.Offset, string(r.Value)})
				}
			}
			return out, nil
		},
		close: cl.Close,
	}
}

func saramaFailover(t *testing.T, seeds []string, topic string) *failoverClient {
	cfg := sarama.NewConfig() // default retries: 3, 100 ms apart
	cfg.ClientID = "spool-integration-failover"
	cfg.Producer.Return.Successes = true // a SyncProducer needs it
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(seeds, cfg)
	if err != nil {
		t.Fatalf("sarama sync producer: %v", err)
	}
	return &failoverClient{
		produce: func(values []string) []sent {
			msgs := make([]*sarama.ProducerMessage, len(values))
			for i, v := range values {
				msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)}
			}
			err := p.SendMessages(msgs)
			failed := map[*sarama.ProducerMessage]error{}
			var perrs sarama.ProducerErrors
			if errors.As(err, &perrs) {
				for _, pe := range perrs {
					failed[pe.Msg] = pe.Err
				}
			} else if err != nil {
				for _, m := range msgs {
					failed[m] = err
				}
			}
			out := make([]sent, len(values))
			for i, m := range msgs {
				out[i] = sent{offset: m.Offset, err: failed[m]}
			}
			return out
		},
		read: func(until int64, _ int) ([]got, error) {
			c, err := sarama.NewConsumer(seeds, cfg)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				return nil, err
			}
			defer pc.Close()
			deadline := time.After(replStep)
			var out []got
			for len(out) == 0 || out[len(out)-1].offset < until {
				select {
				case m := <-pc.Messages():
					out = append(out, got{m.Offset, string(m.Value)})
				case <-deadline:
					return out, fmt.Errorf("read %d records, not up to offset %d", len(out), until)
				}
			}
			return out, nil
		},
		close: func() { p.Close() },
	}
}

func kafkaGoFailover(t *testing.T, seeds []string, topic string) *failoverClient {
	var mu sync.Mutex
	offsets := map[string]int64{}
	// A Transport of its own (kafka-go's defaults): the shared one may
	// cache metadata from before the topic existed.
	transport := &kafka.Transport{}
	w := &kafka.Writer{
		Addr:         kafka.TCP(seeds...),
		Transport:    transport,
		Topic:        topic,
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond, // not 1 s per round; retries stay the default 10 attempts
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if err == nil {
					offsets[string(m.Value)] = m.Offset
				}
			}
		},
	}
	return &failoverClient{
		produce: func(values []string) []sent {
			msgs := make([]kafka.Message, len(values))
			for i, v := range values {
				msgs[i] = kafka.Message{Value: []byte(v)}
			}
			ctx, cancel := context.WithTimeout(context.Background(), replStep)
			defer cancel()
			err := w.WriteMessages(ctx, msgs...)
			var werrs kafka.WriteErrors
			out := make([]sent, len(values))
			mu.Lock()
			defer mu.Unlock()
			for i, v := range values {
				switch {
				case errors.As(err, &werrs) && werrs[i] != nil:
					out[i].err = werrs[i]
				case err != nil && !errors.As(err, &werrs):
					out[i].err = err
				default:
					o, ok := offsets[v]
					if !ok {
						o, out[i].err = -1, fmt.Errorf("no completion for %q", v)
					}
					out[i].offset = o
				}
			}
			return out
		},
		read: func(until int64, _ int) ([]got, error) {
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: seeds, Topic: topic, Partition: 0, MaxWait: 250 * time.Millisecond})
			defer r.Close()
			if err := r.SetOffset(kafka.FirstOffset); err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), replStep)
			defer cancel()
			var out []got
			for len(out) == 0 || out[len(out)-1].offset < until {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return out, fmt.Errorf("read %d records, not up to offset %d: %w", len(out), until, err)
				}
				value := string(m.Value)
				if len(m.Key) == 4 && m.Key[0] == 0 && m.Key[1] == 0 {
					// kafka-go (v0.4.51) never looks at a batch's control bit,
					// so a control record in the log reaches the application
					// (why raftlog keeps Raft's own entries out of it): name
					// one if it ever appears.
					value = fmt.Sprintf("control record? key %x value %x", m.Key, m.Value)
				}
				out = append(out, got{m.Offset, value})
			}
			return out, nil
		},
		close: func() { w.Close(); transport.CloseIdleConnections() },
	}
}

// kcatFailover runs one `kcat -P` per round: librdkafka's defaults (retries
// until message.timeout.ms, 300 s) but with idempotence, since without it
// librdkafka may reorder a retried batch behind a later one. kcat reports
// no offsets.
func kcatFailover(t *testing.T, seeds []string, topic string) *failoverClient {
	brokers := strings.Join(seeds, ",")
	return &failoverClient{
		produce: func(values []string) []sent {
			ctx, cancel := context.WithTimeout(context.Background(), 2*replStep)
			defer cancel()
			cmd := exec.CommandContext(ctx, "kcat", "-b", brokers, "-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true")
			cmd.Stdin = strings.NewReader(strings.Join(values, "\n") + "\n")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			// "% ERROR" and "FAIL" lines name a broker that is down (the killed
			// one, still a bootstrap address); only a delivery report says a
			// message failed.
			if err == nil && strings.Contains(stderr.String(), "Delivery failed") {
				err = errors.New("delivery failed")
			}
			out := make([]sent, len(values))
			for i := range out {
				out[i].offset = -1
				if err != nil {
					out[i].err = fmt.Errorf("kcat -P: %v: %s", err, stderr.String())
				}
			}
			return out
		},
		// kcat -e stops at the high watermark, which a new leader may
		// report low for a moment: read again until every acknowledged
		// record could be there.
		read: func(_ int64, count int) ([]got, error) {
			var out []got
			deadline := time.Now().Add(replStep)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), replStep)
				cmd := exec.CommandContext(ctx, "kcat", "-b", brokers, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				cancel()
				if err != nil {
					return nil, fmt.Errorf("kcat -C: %v: %s", err, stderr.String())
				}
				out = out[:0]
				for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
					off, value, ok := strings.Cut(line, " ")
					o, err := strconv.ParseInt(off, 10, 64)
					if !ok || err != nil {
						return nil, fmt.Errorf("kcat printed %q", line)
					}
					out = append(out, got{o, value})
				}
				if len(out) >= count || time.Now().After(deadline) {
					return out, nil
				}
			}
		},
		close: func() {},
	}
}

// kafkajsFailover keeps one node process (js/failover.js) with one kafkajs
// producer for the whole test.
func kafkajsFailover(t *testing.T, seeds []string, topic string) *failoverClient {
	cmd := exec.Command("node", "js/failover.js")
	level := os.Getenv("SPOOL_KAFKAJS_LOG")
	if level == "" {
		level = "WARN"
	}
	cmd.Env = append(os.Environ(), "KAFKA_BROKERS="+strings.Join(seeds, ","), "KAFKAJS_LOG="+level)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node js/failover.js: %v", err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	ask := func(req map[string]any, out any) error {
		raw, _ := json.Marshal(req)
		if _, err := io.WriteString(stdin, string(raw)+"\n"); err != nil {
			return fmt.Errorf("kafkajs: %w; stderr:\n%s", err, stderr.String())
		}
		select {
		case line, ok := <-lines:
			if !ok {
				return fmt.Errorf("kafkajs exited; stderr:\n%s", stderr.String())
			}
			return json.Unmarshal([]byte(line), out)
		case <-time.After(2 * replStep):
			return fmt.Errorf("kafkajs did not answer %s in %v; stderr:\n%s", raw, 2*replStep, stderr.String())
		}
	}
	return &failoverClient{
		produce: func(values []string) []sent {
			var res struct {
				Offsets []int64 `json:"offsets"`
				Error   string  `json:"error"`
			}
			err := ask(map[string]any{"op": "produce", "topic": topic, "partition": 0, "values": values}, &res)
			if err == nil && res.Error != "" {
				err = errors.New(res.Error)
			}
			if err == nil && len(res.Offsets) != len(values) {
				err = fmt.Errorf("kafkajs answered %d offsets for %d values", len(res.Offsets), len(values))
			}
			out := make([]sent, len(values))
			for i := range out {
				if err != nil {
					out[i].err = err
				} else {
					out[i].offset = res.Offsets[i]
				}
			}
			return out
		},
		read: func(until int64, _ int) ([]got, error) {
			var res struct {
				Messages []struct {
					Offset int64  `json:"offset"`
					Value  string `json:"value"`
				} `json:"messages"`
				Error string `json:"error"`
			}
			if err := ask(map[string]any{"op": "read", "topic": topic, "partition": 0, "until": until}, &res); err != nil {
				return nil, err
			}
			if res.Error != "" {
				return nil, errors.New(res.Error)
			}
			out := make([]got, len(res.Messages))
			for i, m := range res.Messages {
				out[i] = got{m.Offset, m.Value}
			}
			return out, nil
		},
		close: func() {
			stdin.Close()
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("kafkajs stderr:\n%s", stderr.String())
			}
		},
	}
}
