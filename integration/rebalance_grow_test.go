package integration

// Growing a cluster with `spool rebalance apply` (issue 16): three nodes
// hold R=3 data in three topics (the replication tests' workload topic
// under its steady acks=all load and group consumer, and two topics
// filled beforehand), two nodes join, and an operator runs `spool
// rebalance apply` until the plan is empty. The operator's command rather
// than --auto-rebalance, which TestAutoRebalanceGrowUnderLoad covers:
// this is the path DESIGN.md makes the default (a join never moves data
// silently), and the moves it starts are listed, so the replicas moved
// are counted from what was actually started, not inferred. Every
// partition ends where placement over the five brokers puts it (the new
// nodes hold their hash share: exactly PlaceTopic's, whose balance and
// movement bounds membership's placement tests hold), the history checker
// finds every acknowledged record, the producer saw only retriable
// errors, and the replicas moved are logged as a ratio of the ideal (the
// replicas placement over five brokers puts on the new ones), goal ≤ 1.1.
//
// SPOOL_GROW_HEAVY=1 fills the extra topics with 20× the data.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

func TestRebalanceApplyGrowUnderLoad(t *testing.T) {
	// apply alone moves: automatic rebalancing (the default) would start
	// moves of its own, which TestAutoRebalanceGrowUnderLoad covers.
	manual := WithArgs("--auto-rebalance=false")
	nodes := startCluster(t, 3, withQuickGroups, manual)
	r := startReplication(t, nodes)
	extra := map[string]int32{uniqueTopic("grow-a"): 6, uniqueTopic("grow-b"): 8}
	records := 300
	if os.Getenv("SPOOL_GROW_HEAVY") != "" {
		records *= 20
	}
	value := strings.Repeat("v", 1024)
	cl := franzClient(t, nodes[0].KafkaAddr, kgo.SeedBrokers(kafkaAddrs(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()))
	for topic, parts := range extra {
		createReplicatedTopic(t, nodes, topic, parts, 3)
		var recs []*kgo.Record
		for i := range records {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte(value)})
		}
		if err := cl.ProduceSync(ctxTimeout(t, 60*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("fill %s: %v", topic, err)
		}
	}
	topics := map[string]int32{r.topic: replPartitions}
	for k, v := range extra {
		topics[k] = v
	}

	all := append([]*Node(nil), nodes...)
	for id := 4; id <= 5; id++ {
		all = append(all, StartNode(t, WithID(id), WithJoin(nodes[0].GossipAddr), withQuickGroups, manual))
	}
	r.nodes = all
	for _, n := range all {
		waitMembers(t, n, 30*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, 5, "alive", idsOf(all)...)
		})
	}
	roster := []int32{1, 2, 3, 4, 5}
	want := map[string][][]int32{}
	for topic, parts := range topics {
		want[topic] = membership.PlaceTopic(topic, parts, roster, 3)
	}
	// The ideal: the replicas placement over five brokers puts where they
	// are not, over every topic the plan covers (__consumer_offsets too).
	ideal := 0
	retry.Run(t, replStep, func() error {
		var parts []struct {
			Replicas  []int32 `json:"replicas"`
			Preferred []int32 `json:"preferred"`
		}
		out, err := Spool(t, "", "placement", "-o", "json", "--admin", all[0].AdminAddr)
		if err != nil {
			return fmt.Errorf("placement: %v: %s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &parts); err != nil {
			return err
		}
		ideal = 0
		for _, p := range parts {
			if len(p.Replicas) < 2 {
				continue
			}
			for _, b := range p.Preferred {
				if !slices.Contains(p.Replicas, b) {
					ideal++
				}
			}
		}
		return retry.Check(ideal > 0, "placement shows nothing to move yet")
	})

	admin := []string{"--brokers", all[0].KafkaAddr, "--admin", all[0].AdminAddr}
	moveLine := regexp.MustCompile(`^(\S+)/(\d+): moving \[([\d ]*)\] -> \[([\d ]*)\]$`)
	moved, started := 0, 0
	start := time.Now()
	statusSeen := false
	retry.Run(t, 3*replStep, func() error {
		out, err := Spool(t, "", append([]string{"rebalance", "apply", "--max", "4"}, admin...)...)
		if err != nil {
			return fmt.Errorf("rebalance apply: %v: %s", err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			m := moveLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			started++
			from, to := strings.Fields(m[3]), strings.Fields(m[4])
			for _, b := range to {
				if !slices.Contains(from, b) {
					moved++
				}
			}
		}
		if !statusSeen {
			if st, err := Spool(t, "", append([]string{"rebalance", "status"}, admin...)...); err == nil && strings.Contains(st, "overall") {
				statusSeen = true
				t.Logf("rebalance status while moving:\n%s", st)
			}
		}
		plan, err := Spool(t, "", append([]string{"rebalance", "plan", "-o", "json"}, admin...)...)
		if err != nil {
			return fmt.Errorf("rebalance plan: %v: %s", err, plan)
		}
		if strings.TrimSpace(plan) != "[]" {
			return fmt.Errorf("plan not empty yet")
		}
		var st struct {
			Moves []json.RawMessage `json:"moves"`
		}
		out, err = Spool(t, "", append([]string{"rebalance", "status", "-o", "json"}, admin...)...)
		if err != nil {
			return fmt.Errorf("rebalance status: %v: %s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return fmt.Errorf("rebalance status: %v: %s", err, out)
		}
		return retry.Check(len(st.Moves) == 0, "%d moves under way", len(st.Moves))
	})
	took := time.Since(start)

	load := map[int32]int{}
	retry.Run(t, replStep, func() error {
		clear(load)
		for topic, parts := range topics {
			for _, n := range all {
				_, got := metadata(t, n, topic)
				if len(got) != int(parts) {
					return fmt.Errorf("node %d: %s has %d partitions", n.ID, topic, len(got))
				}
				for p, pm := range got {
					if !sameIDs(pm.Replicas, want[topic][p]) {
						return fmt.Errorf("node %d: %s/%d on %v, placement over five brokers %v", n.ID, topic, p, pm.Replicas, want[topic][p])
					}
					if n == all[0] {
						for _, b := range pm.Replicas {
							load[b]++
						}
					}
				}
			}
		}
		return nil
	})
	// What was copied: the learners the leaders added (a move the
	// catalog lost and apply started again copies again).
	added := 0.0
	for _, n := range all {
		added += scrapeMetrics(t, n)["spool_rebalance_replicas_added"]
	}
	ratio := added / float64(ideal)
	total := 0
	for _, parts := range topics {
		total += int(parts)
	}
	t.Logf("GROW: 3 -> 5 nodes, %d partitions in %d topics (and __consumer_offsets): %d moves started copying %d replicas, %v replicas copied (learners added), ideal %d: copied/ideal = %.3f, in %v; replicas per broker of the three topics %v",
		total, len(topics), started, moved, added, ideal, ratio, took.Round(time.Millisecond), load)
	if ratio > 1.1 {
		t.Errorf("copied %v replicas for an ideal of %d: %.3f×, want ≤ 1.1", added, ideal, ratio)
	}
	if load[4] == 0 || load[5] == 0 {
		t.Errorf("the new nodes hold %d and %d replicas", load[4], load[5])
	}

	completed := 0.0
	for _, n := range all {
		completed += scrapeMetrics(t, n)["spool_rebalance_moves_completed"]
	}
	// Moves started beyond those completed were recorded and lost (the
	// topic's entry is one register: a leader ending another partition's
	// move of the topic at once can overwrite it) before any step: no
	// learner was added for them and nothing healed.
	var done, healed int
	for _, n := range all {
		logs := n.Logs()
		done += strings.Count(logs, "reassignment done")
		healed += strings.Count(logs, "reassignment heal")
	}
	t.Logf("spool_rebalance_moves_completed sums to %v over the nodes; the logs show %d moves done, %d heals", completed, done, healed)

	r.w.waitProgress(t, nil, replBatch, replStep, "after the rebalance")
	r.finish(t, 1)
	r.w.errMu.Lock()
	defer r.w.errMu.Unlock()
	for _, err := range r.w.produceErrs {
		if errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) {
			continue // records in flight when the load stopped (its context cancelled)
		}
		if !retriable(err) {
			t.Errorf("the producer saw a non-retriable error: %v", err)
		}
	}
	t.Logf("producer errors, all retriable: %d", len(r.w.produceErrs))
}

// retriable tells whether a produce error is one a client retries or
// times out on: a retriable Kafka code, or franz-go giving up on time.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries) || errors.Is(err, os.ErrDeadlineExceeded)
}
