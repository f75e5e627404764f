package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadmeClusterExampleR3: the README's cluster example as a script
// runs it, with real processes: three nodes started at once in the
// background, `spool members` polled until it shows 3 alive, then at once
// `spool topic create orders -r 3`, which must succeed every time (it
// failed 2 runs in 6 when members called a node alive before every node's
// Metadata listed it; with the tests' fast gossip timings the race hides,
// so the nodes gossip as the README's do). SPOOL_README_RUNS sets the runs
// (20).
func TestReadmeClusterExampleR3(t *testing.T) {
	runs := 20
	if s := os.Getenv("SPOOL_README_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	start := time.Now()
	passed := 0
	var toAlive time.Duration
	for run := range runs {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			// The README's nodes gossip with the default timings, not the
			// tests' fast ones: a join takes longer to reach every node.
			lan := WithArgs("--gossip-timings", "lan")
			first := newNode(t, WithID(1), lan)
			nodes := []*Node{first}
			for id := 2; id <= 3; id++ {
				nodes = append(nodes, newNode(t, WithID(id), WithJoin(first.GossipAddr), lan))
			}
			began := time.Now()
			for _, n := range nodes {
				n.StartNoWait() // as `spool node ... &`
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				r := spoolRun(t, "", "members", "--admin", first.AdminAddr)
				if r.code == 0 && strings.Count(r.stdout, " alive ") == 3 {
					toAlive += time.Since(began)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("members never showed 3 alive: %d %q %q", r.code, r.stdout, r.stderr)
				}
				time.Sleep(50 * time.Millisecond)
			}
			r := spoolRun(t, "", "topic", "create", "orders", "--partitions", "6", "-r", "3", "--brokers", first.KafkaAddr)
			if r.code != 0 {
				t.Fatalf("topic create -r 3 right after members showed 3 alive: exit %d %s%s", r.code, r.stdout, r.stderr)
			}
			passed++
			for _, n := range nodes {
				n.Kill() // the cluster is done with: no graceful leave to wait for
			}
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("MEASURED: %d runs in %d passed, in %v; 3 alive in members %v after the start on average", passed, runs, time.Since(start).Round(time.Millisecond), (toAlive / time.Duration(max(passed, 1))).Round(time.Millisecond))
}
