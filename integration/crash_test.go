package integration

// Acknowledged records survive a crash (SIGKILL) and a graceful stop
// (SIGTERM) that land in the middle of a stream of acks=all produces, with
// the node flushing every append.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// ackedRecord is one record the node acknowledged.
type ackedRecord struct {
	seq    int
	offset int64
}

// streamUntil produces "seq" values to two partitions with acks=all from a
// background goroutine until stop is called, and returns what was
// acknowledged per partition. stop closes the client, which fails whatever
// is still unacknowledged.
func streamUntil(t *testing.T, addr, topic string) (acked func() int, stop func() map[int32][]ackedRecord) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(2000),
		kgo.RetryTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	var (
		mu          sync.Mutex
		byPart      = map[int32][]ackedRecord{}
		count       atomic.Int64
		ctx, cancel = context.WithCancel(context.Background())
		done        = make(chan struct{})
	)
	go func() {
		defer close(done)
		for seq := 0; ctx.Err() == nil; seq++ {
			r := &kgo.Record{Topic: topic, Partition: int32(seq % 2), Value: []byte(strconv.Itoa(seq))}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				s, _ := strconv.Atoi(string(r.Value))
				mu.Lock()
				byPart[r.Partition] = append(byPart[r.Partition], ackedRecord{seq: s, offset: r.Offset})
				mu.Unlock()
				count.Add(1)
			})
		}
	}()
	acked = func() int { return int(count.Load()) }
	stop = func() map[int32][]ackedRecord {
		cancel()
		<-done
		cl.Close() // fails every record still buffered or in flight
		mu.Lock()
		defer mu.Unlock()
		return byPart
	}
	return acked, stop
}

// checkAckedSurvived reads every partition from the start and checks that
// each acknowledged record is at its acknowledged offset and that the log
// holds the producer's sequence in order (records whose ack was lost may be
// there too, never out of order or duplicated).
func checkAckedSurvived(t *testing.T, addr, topic string, byPart map[int32][]ackedRecord) {
	t.Helper()
	total := 0
	for p := int32(0); p < 2; p++ {
		acked := byPart[p]
		total += len(acked)
		if len(acked) == 0 {
			t.Fatalf("partition %d: nothing acknowledged before the fault", p)
		}
		for i := 1; i < len(acked); i++ {
			if acked[i].offset <= acked[i-1].offset || acked[i].seq <= acked[i-1].seq {
				t.Fatalf("partition %d: acks out of order: %+v then %+v", p, acked[i-1], acked[i])
			}
		}
		last := acked[len(acked)-1].offset
		got := franzConsume(t, addr, topic, p, kgo.NewOffset().AtStart(), int(last+1))
		bySeqAt := map[int64]int{}
		prev := -1
		for _, r := range got {
			s, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatalf("partition %d offset %d: value %q is not a sequence number", p, r.Offset, r.Value)
			}
			if s <= prev {
				t.Errorf("partition %d offset %d: seq %d after seq %d: reordered or duplicated", p, r.Offset, s, prev)
			}
			prev = s
			bySeqAt[r.Offset] = s
		}
		for _, a := range acked {
			if s, ok := bySeqAt[a.offset]; !ok || s != a.seq {
				t.Errorf("partition %d: acknowledged seq %d at offset %d, read back %v (present %v)", p, a.seq, a.offset, s, ok)
			}
		}
	}
	t.Logf("%d acknowledged records all present after restart", total)
}

func faultMidStream(t *testing.T, fault func(*Node)) {
	n := StartNode(t)
	topic := uniqueTopic("crash")
	franzCreateTopic(t, n.KafkaAddr, topic, 2)

	acked, stop := streamUntil(t, n.KafkaAddr, topic)
	retry.Run(t, 30*time.Second, func() error {
		if a := acked(); a < 2000 {
			return fmt.Errorf("only %d records acknowledged", a)
		}
		return nil
	})
	fault(n) // the producer is still going
	byPart := stop()

	n.Start()
	checkAckedSurvived(t, n.KafkaAddr, topic, byPart)

	// The recovered node takes new produces on both partitions, after the
	// old data.
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	recs := makeRecords("after", 10, recentBase())
	for i := range recs {
		recs[i].Partition = int32(i % 2)
	}
	franzProduce(t, cl, topic, recs, 5)
	for _, r := range recs {
		last := byPart[r.Partition][len(byPart[r.Partition])-1].offset
		if r.Offset <= last {
			t.Fatalf("new record on partition %d got offset %d, not after the acknowledged %d", r.Partition, r.Offset, last)
		}
	}
	franzVerifyPartitions(t, n.KafkaAddr, topic, recs)
}

// TestCrashKillMidStream: SIGKILL while acks=all produces are in flight.
func TestCrashKillMidStream(t *testing.T) {
	faultMidStream(t, (*Node).Kill)
}

// TestCrashGracefulStopMidStream: SIGTERM while produces are in flight; the
// node finishes what it acknowledged and exits cleanly.
func TestCrashGracefulStopMidStream(t *testing.T) {
	faultMidStream(t, (*Node).Stop)
}
