package node

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func assignmentRequest(partitions int32, rf int16, lists map[int32][]int32, order ...int32) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "pinned", partitions, rf
	for _, p := range order {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, lists[p]
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	return rt
}

// TestManualAssignmentRules: an explicit assignment is taken as given
// (in partition order, replicas in the order listed) or refused with the
// error Kafka's controller gives.
func TestManualAssignmentRules(t *testing.T) {
	roster := []int32{1, 2, 3}
	ok := assignmentRequest(-1, -1, map[int32][]int32{0: {3, 1}, 1: {2, 3}, 2: {1, 2}}, 2, 0, 1)
	got, err := manualAssignment(ok, roster)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{3, 1}, {2, 3}, {1, 2}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("assignment %v, want %v", got, want)
	}

	for _, c := range []struct {
		name string
		rt   kmsg.CreateTopicsRequestTopic
		want *kerr.Error
	}{
		{"replication factor set", assignmentRequest(-1, 2, map[int32][]int32{0: {1, 2}}, 0), kerr.InvalidReplicationFactor},
		{"partitions set", assignmentRequest(1, -1, map[int32][]int32{0: {1}}, 0), kerr.InvalidPartitions},
		{"unknown broker", assignmentRequest(-1, -1, map[int32][]int32{0: {1, 4}}, 0), kerr.InvalidReplicaAssignment},
		{"broker twice", assignmentRequest(-1, -1, map[int32][]int32{0: {2, 2}}, 0), kerr.InvalidReplicaAssignment},
		{"empty list", assignmentRequest(-1, -1, map[int32][]int32{0: {}}, 0), kerr.InvalidReplicaAssignment},
		{"uneven replica counts", assignmentRequest(-1, -1, map[int32][]int32{0: {1, 2}, 1: {3}}, 0, 1), kerr.InvalidReplicaAssignment},
		{"partition twice", assignmentRequest(-1, -1, map[int32][]int32{0: {1}}, 0, 0), kerr.InvalidReplicaAssignment},
		{"gap in partitions", assignmentRequest(-1, -1, map[int32][]int32{0: {1}, 2: {2}}, 0, 2), kerr.InvalidReplicaAssignment},
		{"not from 0", assignmentRequest(-1, -1, map[int32][]int32{1: {1}}, 1), kerr.InvalidReplicaAssignment},
	} {
		_, err := manualAssignment(c.rt, roster)
		var te *topicError
		if !errors.As(err, &te) || te.err != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want.Message)
		}
	}
}

// TestCreateTopicsManualAssignmentSingleNode: through the API, an
// assignment naming this node is created as asked; one naming a broker the
// roster does not hold is INVALID_REPLICA_ASSIGNMENT and creates nothing.
func TestCreateTopicsManualAssignmentSingleNode(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.NodeID = 5
	n := startNode(t, cfg)
	cl := newClient(t, n)
	for _, c := range []struct {
		topic string
		lists map[int32][]int32
		want  int16
	}{
		{"pinned", map[int32][]int32{0: {5}, 1: {5}}, 0},
		{"elsewhere", map[int32][]int32{0: {5}, 1: {6}}, kerr.InvalidReplicaAssignment.Code},
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		rt := assignmentRequest(-1, -1, c.lists, 0, 1)
		rt.Topic = c.topic
		req.Topics = append(req.Topics, rt)
		resp := rawRequest[*kmsg.CreateTopicsResponse](t, cl, req)
		if got := resp.Topics[0].ErrorCode; got != c.want {
			t.Fatalf("%s: error %d, want %d", c.topic, got, c.want)
		}
		spec, ok := n.catalog.Topic(c.topic)
		if c.want != 0 {
			if ok {
				t.Fatalf("%s: created after an error", c.topic)
			}
			continue
		}
		if !ok || spec.Partitions != 2 || spec.ReplicationFactor != 1 || !slices.EqualFunc(spec.Replicas, [][]int32{{5}, {5}}, slices.Equal) {
			t.Fatalf("%s: catalog has %+v", c.topic, spec)
		}
		if resp.Topics[0].NumPartitions != 2 || resp.Topics[0].ReplicationFactor != 1 {
			t.Fatalf("%s: response says %d partitions rf %d", c.topic, resp.Topics[0].NumPartitions, resp.Topics[0].ReplicationFactor)
		}
	}
}
