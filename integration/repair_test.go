package integration

// Damage repaired from peers (issue 26): 3 real nodes, an R=3 topic under
// the acks=all load of the replication tests (replication_load_test.go), a
// byte flipped in a closed segment of a follower's replica and then of a
// leader's; a scrub pass finds each, and the damaged replica is rebuilt
// from its peers (node/hosted's repair.go): the leader hands leadership
// over first, the damaged copy goes whole into DATA/quarantine, the
// replica rejoins with no log and gets the leader's. The history checker
// then finds every acknowledged record once at its offset, every batch
// of the repaired partitions read back passes its CRC, and the repairs
// are listed by /v1/scrub and `spool scrub` (across a kill -9) and counted
// in the metrics. SPOOL_SOAK_CYCLES=N repeats the pair of flips N times
// (1 in the default run), e.g.
//
//	SPOOL_SOAK_CYCLES=20 go test ./integration/ -run TestRepairFlippedBytesFromPeers -timeout 0 -v
//
// and prints the cycles run and the records checked.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/partition"
)

// scrubRepair is one entry of /v1/scrub's repairs (adminapi.ScrubRepair).
type scrubRepair struct {
	Topic         string                 `json:"topic"`
	Partition     int32                  `json:"partition"`
	State         string                 `json:"state"`
	Detail        string                 `json:"detail"`
	Damage        []partition.Corruption `json:"damage"`
	Quarantine    string                 `json:"quarantine"`
	HighWatermark int64                  `json:"high_watermark"`
	FoundAt       time.Time              `json:"found_at"`
	StartedAt     time.Time              `json:"started_at"`
	RepairedAt    time.Time              `json:"repaired_at"`
}

type repairStatus struct {
	Repairs        []scrubRepair `json:"repairs"`
	RepairsStarted int           `json:"repairs_started"`
	RepairsDone    int           `json:"repairs_done"`
	Corrupt        []scrubFinding
}

// repaired lists n's repairs of topic/p that are done.
func repaired(t *testing.T, n *Node, topic string, p int32) ([]scrubRepair, repairStatus, error) {
	var st repairStatus
	if err := n.getJSON("/v1/scrub", &st); err != nil {
		return nil, st, err
	}
	var out []scrubRepair
	for _, r := range st.Repairs {
		if r.Topic == topic && r.Partition == p && r.State == "repaired" {
			out = append(out, r)
		}
	}
	return out, st, nil
}

// flipped is one byte flipped in a closed segment of a replica.
type flipped struct {
	node    *Node
	p       int32
	segment string
	pos     int64 // of the flipped byte
	was     byte
	batch   partition.BatchHeader
}

// flipInClosedSegment flips the last byte of a batch in the middle of a
// closed segment of n's replica of topic/p, once it has two closed ones.
func flipInClosedSegment(t *testing.T, n *Node, topic string, p int32) flipped {
	t.Helper()
	dir := filepath.Join(n.Dir, fmt.Sprintf("%s-%d", topic, p))
	var logs []string
	retry.Run(t, replStep, func() error {
		logs = segmentLogs(t, dir)
		if len(logs) < 3 {
			return fmt.Errorf("%s: %d segments, want two closed", dir, len(logs))
		}
		return nil
	})
	seg := logs[len(logs)-2]
	b, bs := segmentBatches(t, seg)
	d := bs[len(bs)/2]
	last := d.pos + d.h.Size() - 1
	writeBytesAt(t, seg, last, []byte{b[last] ^ 0x10})
	return flipped{node: n, p: p, segment: seg, pos: last, was: b[last], batch: d.h}
}

// awaitRepair asks n for a scrub pass and waits for its replica of topic/p
// to be repaired once more than done times; it checks what the repair
// reports and kept, and returns it.
func awaitRepair(t *testing.T, topic string, f flipped, done int) scrubRepair {
	t.Helper()
	n := f.node
	if out, err := Spool(t, "", "scrub", "--start", "--admin", n.AdminAddr); err != nil {
		t.Fatalf("spool scrub --start on node %d: %v\n%s", n.ID, err, out)
	}
	var rep scrubRepair
	retry.Run(t, 2*replStep, func() error {
		rs, st, err := repaired(t, n, topic, f.p)
		if err != nil {
			return err
		}
		if len(rs) <= done {
			return fmt.Errorf("node %d: %d repairs of %s/%d done, want %d; repairs %+v", n.ID, len(rs), topic, f.p, done+1, st.Repairs)
		}
		rep = rs[len(rs)-1]
		return nil
	})
	hit := false
	for _, c := range rep.Damage {
		hit = hit || (c.Segment == f.segment && c.Offset == f.batch.BaseOffset && c.EndOffset == f.batch.LastOffset()+1)
	}
	if !hit || rep.Quarantine == "" || rep.StartedAt.IsZero() || rep.RepairedAt.Before(rep.StartedAt) {
		t.Fatalf("node %d repair %+v: want the damaged batch at offsets %d-%d of %s, a quarantine, times", n.ID, rep, f.batch.BaseOffset, f.batch.LastOffset(), f.segment)
	}
	// The damaged copy is kept whole, the flipped byte in it.
	kept, err := os.ReadFile(filepath.Join(rep.Quarantine, filepath.Base(f.segment)))
	if err != nil || int64(len(kept)) <= f.pos || kept[f.pos] != f.was^0x10 {
		t.Fatalf("node %d: the damaged segment is not in quarantine %s as it was: %v", n.ID, rep.Quarantine, err)
	}
	return rep
}

// readAllValid reads topic/p from its start to its high watermark from
// its leader with raw fetches and fails on any batch that fails its CRC or
// any offset missing: what a consumer is served after the repair.
func readAllValid(t *testing.T, nodes []*Node, topic string, p int32) int64 {
	t.Helper()
	var next, end int64
	retry.Run(t, replStep, func() error {
		leader := waitLeader(t, nodes, topic, p, -1, replStep)
		cl := franzClient(t, leader.KafkaAddr, kgo.MaxVersions(kversion.V2_8_0()))
		for end == 0 || next < end {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxBytes = -1, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = p, next, 1<<20, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
			if err != nil {
				return err
			}
			rpart := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(rpart.ErrorCode); err != nil {
				return fmt.Errorf("fetch %s/%d at %d from node %d: %w", topic, p, next, leader.ID, err)
			}
			if end == 0 {
				end = rpart.HighWatermark
			}
			if next >= end {
				break
			}
			b := rpart.RecordBatches
			if len(b) == 0 {
				return fmt.Errorf("fetch %s/%d at %d: nothing below the high watermark %d", topic, p, next, end)
			}
			for len(b) > 0 {
				h, err := recordbatch.ParseHeader(b)
				if err != nil || h.Size() > int64(len(b)) {
					break // a partial batch at the end of the answer
				}
				if err := partition.ValidateBatches(b[:h.Size()]); err != nil {
					t.Fatalf("%s/%d: node %d served a batch at offset %d that fails its check: %v", topic, p, leader.ID, h.BaseOffset, err)
				}
				if h.BaseOffset > next {
					t.Fatalf("%s/%d: node %d served offset %d after %d: a hole", topic, p, leader.ID, h.BaseOffset, next)
				}
				next = h.LastOffset() + 1
				b = b[h.Size():]
			}
		}
		return nil
	})
	return end
}

func TestRepairFlippedBytesFromPeers(t *testing.T) {
	cycles := soakCycles(t)
	nodes := startCluster(t, 3, withQuickGroups, WithArgs("--segment-bytes", "16384", "--scrub-interval", "1h"),
		func(n *Node) { n.Env = append(n.Env, "SPOOL_SCRUB_RATE=100000000") })
	r := startReplication(t, nodes)
	done := map[string]int{} // repairs done, by node and partition
	doneKey := func(n *Node, p int32) string { return fmt.Sprintf("%d/%d", n.ID, p) }
	var victims []*Node
	for c := 0; c < cycles; c++ {
		for _, role := range []string{"follower", "leader"} {
			p := int32((2*c + len(victims)%2) % replPartitions)
			leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
			victim := leader
			if role == "follower" {
				victim = except(r.nodes, leader)[c%2]
			}
			f := flipInClosedSegment(t, victim, r.topic, p)
			t.Logf("cycle %d: flipped a byte of offsets %d-%d in %s on node %d, %s of partition %d",
				c, f.batch.BaseOffset, f.batch.LastOffset(), filepath.Base(f.segment), victim.ID, role, p)
			rep := awaitRepair(t, r.topic, f, done[doneKey(victim, p)])
			done[doneKey(victim, p)]++
			t.Logf("cycle %d: node %d repaired partition %d: %s (started %s, repaired %s)", c, victim.ID, p, rep.Detail,
				rep.StartedAt.Format(time.StampMilli), rep.RepairedAt.Format(time.StampMilli))
			if role == "leader" && !strings.Contains(victim.Logs(), "damaged replica leads: handing leadership over") {
				t.Fatalf("cycle %d: node %d led partition %d with damage and did not hand leadership over", c, victim.ID, p)
			}
			end := readAllValid(t, r.nodes, r.topic, p)
			t.Logf("cycle %d: partition %d read back whole and valid up to offset %d", c, p, end)
			r.w.waitProgress(t, nil, replBatch, replStep, fmt.Sprintf("cycle %d, after the %s's repair", c, role))
			victims = append(victims, victim)
		}
	}

	// Counted in the metrics of the node that repaired.
	v := victims[0]
	m := scrapeMetrics(t, v)
	var want float64
	for k, d := range done {
		if strings.HasPrefix(k, fmt.Sprintf("%d/", v.ID)) {
			want += float64(d)
		}
	}
	if m["spool_scrub_repairs_started"] != want || m["spool_scrub_repairs_completed"] != want || m["spool_scrub_repairs_waiting"] != 0 {
		t.Fatalf("node %d metrics: repairs started %v, completed %v, waiting %v; want %v, %v, 0", v.ID,
			m["spool_scrub_repairs_started"], m["spool_scrub_repairs_completed"], m["spool_scrub_repairs_waiting"], want, want)
	}
	// Kept across a kill -9, and shown by spool scrub.
	v.Kill()
	v.Start()
	var st repairStatus
	if err := v.getJSON("/v1/scrub", &st); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, rep := range st.Repairs {
		if rep.Topic == r.topic && rep.State == "repaired" {
			kept++
		}
	}
	if float64(kept) != want || len(st.Corrupt) != 0 {
		t.Fatalf("node %d after kill -9: %d repairs listed, %d corrupt batches; want %v and none", v.ID, kept, len(st.Corrupt), want)
	}
	out, err := Spool(t, "", "scrub", "--admin", v.AdminAddr)
	if err != nil || !strings.Contains(out, "REPLICAS REBUILT FROM THEIR PEERS") || !strings.Contains(out, r.topic) || !strings.Contains(out, "repaired") {
		t.Fatalf("spool scrub on node %d: %v\n%s", v.ID, err, out)
	}
	r.w.waitProgress(t, nil, replBatch, replStep, "after the kill -9")
	r.finish(t, cycles)
}

// A damaged replica waits while the rest of its group is not a caught-up
// majority: with the partition's third replica killed, the damaged
// follower and the leader are the only majority, so it keeps its copy,
// the damage fenced, and says so (waiting, in /v1/scrub and the gauge);
// once the third is back and caught up, it is rebuilt. The history
// checker then finds every acknowledged record.
func TestRepairWaitsForACaughtUpMajority(t *testing.T) {
	nodes := startCluster(t, 3, withQuickGroups, WithArgs("--segment-bytes", "16384", "--scrub-interval", "1h"),
		func(n *Node) { n.Env = append(n.Env, "SPOOL_SCRUB_RATE=100000000") })
	r := startReplication(t, nodes)
	const p = 0
	leader := waitLeader(t, r.nodes, r.topic, p, -1, replStep)
	others := except(r.nodes, leader)
	victim, down := others[0], others[1]
	f := flipInClosedSegment(t, victim, r.topic, p)
	down.Kill()
	t.Logf("flipped offsets %d-%d on node %d, killed node %d", f.batch.BaseOffset, f.batch.LastOffset(), victim.ID, down.ID)
	r.w.waitProgress(t, []int32{p}, replBatch, replStep, "with the third replica down")
	if out, err := Spool(t, "", "scrub", "--start", "--admin", victim.AdminAddr); err != nil {
		t.Fatalf("spool scrub --start: %v\n%s", err, out)
	}
	var waiting scrubRepair
	retry.Run(t, replStep, func() error {
		var st repairStatus
		if err := victim.getJSON("/v1/scrub", &st); err != nil {
			return err
		}
		for _, rep := range st.Repairs {
			if rep.Topic == r.topic && rep.Partition == p && rep.State == "waiting" && strings.Contains(rep.Detail, "of the other voters") {
				waiting = rep
				return nil
			}
		}
		return fmt.Errorf("no repair of partition %d waiting for the others: %+v", p, st.Repairs)
	})
	t.Logf("waiting: %s", waiting.Detail)
	// Still waiting two repair passes (5 s apart) on, the damaged copy in
	// place, while the leader and it keep taking writes.
	retry.Run(t, replStep, func() error {
		if since := time.Since(waiting.FoundAt); since < 11*time.Second {
			return fmt.Errorf("waiting for %v", since)
		}
		return nil
	})
	r.w.waitProgress(t, []int32{p}, replBatch, replStep, "while the damaged replica waits")
	if rs, st, err := repaired(t, victim, r.topic, p); err != nil || len(rs) != 0 || st.RepairsStarted != 0 {
		t.Fatalf("rebuilt with only the leader holding everything: %v %+v", err, st.Repairs)
	}
	if b, err := os.ReadFile(f.segment); err != nil || b[f.pos] != f.was^0x10 {
		t.Fatalf("the damaged copy was not kept in place while waiting: %v", err)
	}
	if m := scrapeMetrics(t, victim); m["spool_scrub_repairs_waiting"] != 1 {
		t.Fatalf("spool_scrub_repairs_waiting %v, want 1", m["spool_scrub_repairs_waiting"])
	}
	out, err := Spool(t, "", "scrub", "--admin", victim.AdminAddr)
	if err != nil || !strings.Contains(out, "waiting") {
		t.Fatalf("spool scrub: %v\n%s", err, out)
	}

	down.Start()
	awaitRepair(t, r.topic, f, 0)
	readAllValid(t, r.nodes, r.topic, p)
	r.w.waitProgress(t, nil, replBatch, replStep, "after the repair")
	r.finish(t, 1)
}
