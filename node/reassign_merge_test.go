package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/spool-log/spool/internal/retry"
)

// Moves of the partitions of one topic recorded one request at a time on
// one node, while the partitions' leaders, spread over the cluster, end the
// moves already recorded: each end and each start alters the topic on a
// different node at nearly the same time. The catalog merges them partition
// by partition, so every move starts and ends: every partition reaches its
// target on every node, with no move left. (Kept as one register per topic,
// a move recorded while another partition's end was in flight was lost,
// and its partition never moved.)
func TestReassignConcurrentMovesOfOneTopicAllSurvive(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "permerge"
	const partitions = 12
	spec := startReplicatedTopic(t, nodes, topic, partitions, 3)
	adm := newAdmin(t, nodes[0])
	ctx := testCtx(t)
	want := spec.Replicas
	for round := range 8 {
		// Each round reverses the replica list of half the partitions (a
		// move of order only, which its leader ends at its next pass),
		// the other half from the previous round, whose ends are being
		// recorded meanwhile: starts recorded here and ends recorded by
		// the leaders overlap. A partition's own move is started only
		// once its previous one has ended here: concurrent changes of one
		// partition settle on the newer, one of them lost by design.
		moved := 0
		for p := int32(round % 2); p < partitions; p += 2 {
			retry.Run(t, 30*time.Second, func() error {
				s, _ := nodes[0].catalog.Topic(topic)
				_, moving := s.Moves[p]
				return retry.Check(!moving && slices.Equal(s.Replicas[p], want[p]), "round %d: partition %d still moving", round, p)
			})
			want[p] = []int32{want[p][2], want[p][1], want[p][0]}
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, p, want[p])
			rs, err := adm.AlterPartitionAssignments(ctx, req)
			if err == nil {
				err = rs.Error()
			}
			if err != nil {
				t.Fatalf("round %d: move of partition %d: %v", round, p, err)
			}
			moved++
		}
		retry.Run(t, 30*time.Second, func() error {
			s, _ := nodes[0].catalog.Topic(topic)
			return retry.Check(len(s.Moves) < moved, "round %d: no move ended yet", round)
		})
	}
	retry.Run(t, 60*time.Second, func() error {
		for _, n := range nodes {
			s, ok := n.catalog.Topic(topic)
			if !ok {
				return fmt.Errorf("node %d: no topic", n.NodeID())
			}
			if len(s.Moves) != 0 {
				return fmt.Errorf("node %d: moves under way %v", n.NodeID(), s.Moves)
			}
			for p := range int32(partitions) {
				if !slices.Equal(s.Replicas[p], want[p]) {
					return fmt.Errorf("node %d: partition %d replicas %v, want %v", n.NodeID(), p, s.Replicas[p], want[p])
				}
			}
		}
		return nil
	})
	retry.Run(t, 20*time.Second, func() error {
		d := nodes[0].Membership().Digest()
		for _, n := range nodes[1:] {
			if n.Membership().Digest() != d {
				return fmt.Errorf("node %d's catalog digest differs from node %d's", n.NodeID(), nodes[0].NodeID())
			}
		}
		return nil
	})
}
