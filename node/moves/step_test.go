package moves

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/replica"
)

// fakeReplica is a leader's replica whose configuration a step changes,
// recording what it was asked.
type fakeReplica struct {
	conf     replica.Conf
	caughtUp map[int32]bool
	asked    []string
}

func (r *fakeReplica) Replicated() bool             { return true }
func (r *fakeReplica) WritableEpoch() (int32, bool) { return 1, true }
func (r *fakeReplica) IsLeader() bool               { return true }
func (r *fakeReplica) Conf() (replica.Conf, bool)   { return r.conf, true }
func (r *fakeReplica) CaughtUp(b int32) bool        { return r.caughtUp[b] }
func (r *fakeReplica) Size() int64                  { return 1000 }
func (r *fakeReplica) LogStartOffset() int64        { return 0 }
func (r *fakeReplica) LogEndOffset() int64          { return 100 }
func (r *fakeReplica) MemberProgress(int32) (replica.Progress, bool) {
	return replica.Progress{Offset: 50}, true
}
func (r *fakeReplica) TransferLeadership(b int32) {
	r.asked = append(r.asked, fmt.Sprintf("transfer %d", b))
}
func (r *fakeReplica) LeaveJoint(context.Context) error {
	r.asked = append(r.asked, "leave joint")
	return nil
}
func (r *fakeReplica) ChangeConf(_ context.Context, cs ...replica.ConfChange) error {
	s := "change"
	for _, c := range cs {
		s += fmt.Sprintf(" %s %d", [...]string{"learner", "voter", "remove"}[c.Kind], c.Broker)
	}
	r.asked = append(r.asked, s)
	return nil
}

type nopMetrics struct{}

func (nopMetrics) IncrCounter([]string, float32) {}
func (nopMetrics) SetGauge([]string, float32)    {}

// TestStep: each step of a move (step.go's list), as the leader (broker 1)
// takes it from the group's configuration towards the target, and the
// step Status names for that configuration, which must be the one taken.
func TestStep(t *testing.T) {
	all := map[int32]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	for _, c := range []struct {
		name     string
		conf     replica.Conf
		target   []int32
		caughtUp map[int32]bool
		want     string // what the replica is asked; "end" for the move's end in the catalog
		step     string
	}{
		{"a joint configuration is left", replica.Conf{Voters: []int32{1, 2, 4}, VotersOutgoing: []int32{1, 2, 3}},
			[]int32{1, 2, 4}, all, "leave joint", adminapi.StepPromoting},
		{"a learner the target dropped is removed", replica.Conf{Voters: []int32{1, 2, 3}, Learners: []int32{5}},
			[]int32{1, 2, 4}, all, "change remove 5", adminapi.StepRemoving},
		{"a new replica joins as a learner", replica.Conf{Voters: []int32{1, 2, 3}},
			[]int32{1, 2, 4}, all, "change learner 4", adminapi.StepAddingLearner},
		{"a learner behind waits", replica.Conf{Voters: []int32{1, 2, 3}, Learners: []int32{4}},
			[]int32{1, 2, 4}, map[int32]bool{}, "", adminapi.StepCatchingUp},
		{"caught-up learners promoted, leavers removed, in one change", replica.Conf{Voters: []int32{1, 2, 3}, Learners: []int32{4}},
			[]int32{1, 2, 4}, all, "change voter 4 remove 3", adminapi.StepPromoting},
		{"the leader leaving is kept out of the change", replica.Conf{Voters: []int32{1, 2, 3}, Learners: []int32{4}},
			[]int32{4, 2, 3}, all, "change voter 4", adminapi.StepPromoting},
		{"a leaving leader hands off to a caught-up target voter", replica.Conf{Voters: []int32{1, 2, 3, 4}},
			[]int32{4, 2, 3}, map[int32]bool{4: true}, "transfer 4", adminapi.StepHandingOff},
		{"voters the target leaves out are removed", replica.Conf{Voters: []int32{1, 2, 3, 4, 5}},
			[]int32{1, 2, 4}, all, "change remove 3 remove 5", adminapi.StepRemoving},
		{"the voters are the target: the move ends", replica.Conf{Voters: []int32{4, 1, 2}},
			[]int32{1, 2, 4}, all, "end", adminapi.StepRemoving},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &fakeReplica{conf: c.conf, caughtUp: c.caughtUp}
			var ended []int32
			m := New(Config{Self: 1, Metrics: nopMetrics{}, Log: logrus.New(),
				Cluster: fakeCluster{},
				Alter: func(topic string, change func(*membership.TopicEntry) error) error {
					e := membership.TopicEntry{Name: topic, Partitions: 1, Replicas: [][]int32{{1, 2, 3}},
						Moves: []membership.PartitionMove{{Partition: 0, Target: c.target}}}
					if err := change(&e); err != nil {
						return err
					}
					ended = e.Replicas[0]
					return nil
				}})
			p := Hosted{Topic: "t", Index: 0, Replica: r}
			if err := m.step(context.Background(), p, c.target); err != nil {
				t.Fatal(err)
			}
			got := ""
			switch {
			case ended != nil:
				got = "end"
				if !slices.Equal(ended, c.target) {
					t.Errorf("the move ended on %v, want the target %v", ended, c.target)
				}
			case len(r.asked) > 1:
				t.Fatalf("one step asked %q", r.asked)
			case len(r.asked) == 1:
				got = r.asked[0]
			}
			if got != c.want {
				t.Errorf("step took %q, want %q", got, c.want)
			}
			if s := stepName(c.conf, c.target, 1, r.CaughtUp); s != c.step {
				t.Errorf("status names the step %q, want %q", s, c.step)
			}
		})
	}
}

// fakeCluster is a cluster with no topic: the moved partition's entry
// comes from Alter.
type fakeCluster struct{ Cluster }

func (fakeCluster) Topic(string) (membership.TopicEntry, bool) { return membership.TopicEntry{}, false }
