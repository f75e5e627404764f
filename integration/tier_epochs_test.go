package integration

// OffsetForLeaderEpoch below the local log start (issue 30): the epochs
// whose records are only in the store are answered from the upload
// records' leader epochs, as the local cache answered them before local
// retention cut their segments.

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/internal/retry"
)

// epochRun is where one leader epoch's records start in a partition.
type epochRun struct {
	epoch int32
	first int64
}

// recordEpochs reads partition p from offset 0 to end and returns the
// leader epochs its records were written in, oldest first.
func recordEpochs(t testing.TB, seeds []string, topic string, p int32, end int64) []epochRun {
	t.Helper()
	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(0)}}))
	ctx := ctxTimeout(t, 2*time.Minute)
	var runs []epochRun
	next := int64(0)
	for next < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("partition %d read to %d of %d: %v", p, next, end, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next {
				return
			}
			next = r.Offset + 1
			if n := len(runs); n == 0 || runs[n-1].epoch != r.LeaderEpoch {
				if n > 0 && r.LeaderEpoch < runs[n-1].epoch {
					t.Errorf("partition %d: offset %d written in epoch %d, after epoch %d", p, r.Offset, r.LeaderEpoch, runs[n-1].epoch)
				}
				runs = append(runs, epochRun{r.LeaderEpoch, r.Offset})
			}
		})
	}
	return runs
}

// leaderLocalStart is the local log start `spool topic describe` reports
// for partition p (its leader's).
func leaderLocalStart(t testing.TB, seeds []string, topic string, p int32) (int64, error) {
	out, err := Spool(t, "", "topic", "describe", topic, "-o", "json", "--brokers", seeds[0])
	if err != nil {
		return 0, fmt.Errorf("%v: %s", err, out)
	}
	var ds client.DescribedTopics
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		return 0, fmt.Errorf("%v: %s", err, out)
	}
	for _, dp := range ds[0].Partitions {
		if dp.Partition == p && dp.LocalStart != nil {
			return *dp.LocalStart, nil
		}
	}
	return 0, fmt.Errorf("no local start for partition %d in %s", p, out)
}

// checkEpochEndsFromStore asks OffsetForLeaderEpoch for every epoch the
// records of partition p were written in and checks each answer against
// what the records say: an epoch ends where the next one's records start,
// the last at the log end. It first waits until local retention has cut
// the oldest epoch's records, so that at least that answer comes from the
// store's side.
func checkEpochEndsFromStore(t *testing.T, seeds []string, topic string, p int32) {
	t.Helper()
	adm := kadm.NewClient(franzClient(t, seeds[0], kgo.SeedBrokers(seeds...)))
	ends, err := adm.ListEndOffsets(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, p)
	runs := recordEpochs(t, seeds, topic, p, end.Offset)
	if len(runs) < 2 {
		t.Fatalf("partition %d: records in %d leader epochs (%v), the test needs a leader change", p, len(runs), runs)
	}
	var localStart int64
	retry.Run(t, 60*time.Second, func() error {
		var err error
		if localStart, err = leaderLocalStart(t, seeds, topic, p); err == nil && localStart <= runs[1].first {
			err = fmt.Errorf("local start %d: epoch %d's records (from %d) are still local", localStart, runs[0].epoch, runs[1].first)
		}
		return err
	})
	t.Logf("partition %d: epochs %v below end %d; the leader's local log starts at %d", p, runs, end.Offset, localStart)

	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	for i, r := range runs {
		want := end.Offset
		if i+1 < len(runs) {
			want = runs[i+1].first
		}
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p, -1, r.epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetForLeaderEpoch(epoch %d): %+v", r.epoch, resp)
		}
		a := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(a.ErrorCode); err != nil || a.LeaderEpoch != r.epoch || a.EndOffset != want {
			t.Errorf("OffsetForLeaderEpoch(epoch %d) = epoch %d, end %d, %v; the records say epoch %d ends at %d (local start %d)",
				r.epoch, a.LeaderEpoch, a.EndOffset, err, r.epoch, want, localStart)
		}
	}
}
