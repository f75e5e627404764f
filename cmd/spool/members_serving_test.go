package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/nodetest"
)

// TestMembersAliveMeansServing is the README's cluster example as a
// script runs it, on fresh clusters: start three nodes at once, wait
// until `spool members` (asked of node 1) shows 3 alive, then at once
// `spool topic create -r 3`. The CLI checks the factor against the
// brokers Metadata lists, which any node may answer: a member shown alive
// before every node's Metadata listed the three failed it ("only 2 brokers
// alive"). Members now shows a node joining until it serves and sees the
// brokers the answering node does. SPOOL_MEMBERS_RUNS sets the runs (5:
// the code before failed on the first; integration/readme_cluster_test.go
// runs the README's example 20 times with real processes).
func TestMembersAliveMeansServing(t *testing.T) {
	runs := 5
	if s := os.Getenv("SPOOL_MEMBERS_RUNS"); s != "" {
		runs, _ = strconv.Atoi(s)
	}
	start := time.Now()
	joining := 0
	var toAlive time.Duration
	for run := range runs {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			first := nodetest.Start(t, func(c *node.Config) { c.NodeID = 1 })
			began := time.Now()
			for id := int32(2); id <= 3; id++ {
				nodetest.StartUnadmitted(t, func(c *node.Config) {
					c.NodeID = id
					c.Gossip.Join = []string{first.Membership().Local().GossipAddr}
				})
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				out, _, err := runCLI(t, "", "members", "--admin", first.AdminAddr())
				if err == nil && strings.Count(out, " alive ") == 3 {
					toAlive += time.Since(began)
					break
				}
				if err == nil && strings.Contains(out, " joining ") {
					joining++
				}
				if time.Now().After(deadline) {
					t.Fatalf("members never showed 3 alive: %q %v", out, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if _, _, err := runCLI(t, "", "topic", "create", "t", "-r", "3", "--brokers", first.KafkaAddr()); err != nil {
				t.Fatalf("topic create -r 3 right after members showed 3 alive: %v", err)
			}
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("%d runs in %v; 3 alive %v after the first node on average; members showed a node joining %d times", runs, time.Since(start).Round(time.Millisecond), (toAlive / time.Duration(max(runs, 1))).Round(time.Millisecond), joining)
}
