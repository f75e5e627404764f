package leadership

import (
	"slices"
	"testing"

	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/topics"
)

// TestOfNotHostedHere: for a partition this node does not host, Of is the
// live leader's claim when the claim's leader is among the replicas or
// the voters it claims, else the cluster view's guess.
func TestOfNotHostedHere(t *testing.T) {
	spec := topics.Spec{Name: "t", ID: topics.TopicID{1}, Partitions: 1, ReplicationFactor: 3,
		Replicas: [][]int32{{1, 2, 3}}}
	view := replica.State{Leader: 1, LeaderEpoch: -1, ISR: []int32{1}, Offline: []int32{}}
	for _, c := range []struct {
		name  string
		claim *Claim // made by its leader, nil: none
		alive []int32
		want  replica.State
	}{
		{"no claim: the cluster view", nil, []int32{1, 2, 3}, view},
		{"a live replica's claim",
			&Claim{Leader: 2, Epoch: 7, ISR: []int32{2, 3}, Offline: []int32{1}}, []int32{1, 2, 3},
			replica.State{Leader: 2, LeaderEpoch: 7, ISR: []int32{2, 3}, Offline: []int32{1}}},
		{"a dead leader's claim is ignored",
			&Claim{Leader: 2, Epoch: 7, ISR: []int32{2, 3}}, []int32{1, 3}, view},
		{"a claim from outside the replicas is ignored",
			&Claim{Leader: 4, Epoch: 9, ISR: []int32{4}}, []int32{1, 2, 3, 4}, view},
		{"a leader outside the replicas whose group still counts it",
			&Claim{Leader: 4, Epoch: 9, ISR: []int32{4, 1}, Voters: []int32{4, 1, 2}}, []int32{1, 2, 3, 4},
			replica.State{Leader: 4, LeaderEpoch: 9, ISR: []int32{4, 1}, Offline: []int32{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := NewLeaders(LeadersConfig{
				Self:   9,
				Hosted: func(string, int32, topics.TopicID) *hosted.Partition { return nil },
				ClusterView: func(topics.Spec, int32, func(int32) bool) replica.State {
					return view
				},
			})
			if c.claim != nil {
				cl := *c.claim
				cl.Topic, cl.Partition = spec.ID, 0
				src := NewLocal(cl.Leader)
				src.Set([]Claim{cl})
				if err := l.table.Apply(cl.Leader, src.Message(0, 0)); err != nil {
					t.Fatal(err)
				}
			}
			got := l.Of(spec, 0, func(id int32) bool { return slices.Contains(c.alive, id) })
			if got.Leader != c.want.Leader || got.LeaderEpoch != c.want.LeaderEpoch ||
				!slices.Equal(got.ISR, c.want.ISR) || !slices.Equal(got.Offline, c.want.Offline) {
				t.Fatalf("Of = %+v, want %+v", got, c.want)
			}
		})
	}
}
