package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// A group coordinator cut off from the rest of its offsets partition's
// replicas (here: none of its Raft messages leave) still believes it
// leads until it hears of a newer term; asked to describe a group
// meanwhile, it answers NOT_COORDINATOR, as for OffsetFetch, rather than
// the group as it last knew it, which a newer coordinator may have moved
// on.
func TestDescribeGroupsConfirmsTheCoordinator(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic, groupID = "confirm-describe", "confirm-describe-group"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	adm := newAdmin(t, nodes[0])
	var coordID int32
	retry.Run(t, 30*time.Second, func() error {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
		r, err := adm.CommitOffsets(testCtx(t), groupID, offs)
		if err == nil {
			err = r.Error()
		}
		if err != nil {
			return err
		}
		cs := adm.FindGroupCoordinators(testCtx(t), groupID)
		c, ok := cs[groupID]
		if !ok || c.Err != nil {
			return fmt.Errorf("coordinator of %s: %v", groupID, c.Err)
		}
		coordID = c.NodeID
		return nil
	})
	var coord *Node
	for _, n := range nodes {
		if n.NodeID() == coordID {
			coord = n
		}
	}
	describe := func() (int16, error) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = 5
		req.Groups = []string{groupID}
		// To that broker, not routed by the client (which would find
		// the group's next coordinator on NOT_COORDINATOR).
		raw, err := newClient(t, coord).Broker(int(coordID)).Request(testCtx(t), req)
		if err != nil {
			return 0, err
		}
		resp := raw.(*kmsg.DescribeGroupsResponse)
		if len(resp.Groups) != 1 {
			return 0, fmt.Errorf("%d groups in the answer", len(resp.Groups))
		}
		return resp.Groups[0].ErrorCode, nil
	}
	if code, err := describe(); err != nil || code != 0 {
		t.Fatalf("describe at the coordinator before: %d %v", code, err)
	}
	coord.repl.Driver().SetTransport(mutedTransport{})
	code, err := describe()
	if err != nil {
		t.Fatal(err)
	}
	if code != kerr.NotCoordinator.Code {
		t.Fatalf("a coordinator that cannot reach its quorum described the group from memory (error %d), want NOT_COORDINATOR", code)
	}
}
