package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionlessAndNewSessions: a full fetch (epoch -1, sessionless,
// or 0, a new session) is answered for every partition whatever session id
// it names, with session id 0 (no session kept); an incremental one (epoch
// > 0) names a session that does not exist.
func TestFetchSessionlessAndNewSessions(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	createTopic(t, newAdmin(t, n), "s", 2, nil)
	cl := newClient(t, n)
	produceRaw(t, cl, "s", rawBatch(-1, -1, -1, time.Now().UnixMilli(), "a", "b"))
	vc := dialVersions(t, n.KafkaAddr())
	for _, c := range []struct {
		id, epoch int32
		full      bool
	}{
		{-1, -1, true}, {0, -1, true}, {77, -1, true}, // kafka-go's Client sends -1/-1
		{0, 0, true}, {77, 0, true}, {-1, 0, true},
		{77, 1, false}, {0, 5, false},
	} {
		for _, v := range []int16{7, 12, 17} {
			what := fmt.Sprintf("Fetch v%d session %d epoch %d", v, c.id, c.epoch)
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxBytes, req.SessionID, req.SessionEpoch = v, 1<<20, c.id, c.epoch
			rt := kmsg.NewFetchRequestTopic()
			spec, _ := n.catalog.Topic("s")
			rt.Topic, rt.TopicID = "s", spec.ID
			for p := range int32(2) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = p, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp := roundTrip[*kmsg.FetchResponse](t, vc, req)
			if !c.full {
				if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
					t.Fatalf("%s: error %d, %d topics; want FETCH_SESSION_ID_NOT_FOUND", what, resp.ErrorCode, len(resp.Topics))
				}
				continue
			}
			if resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("%s: error %d session %d, %d topics", what, resp.ErrorCode, resp.SessionID, len(resp.Topics))
			}
			p0 := resp.Topics[0].Partitions[0]
			if p0.ErrorCode != 0 || p0.HighWatermark != 2 || len(p0.RecordBatches) == 0 {
				t.Fatalf("%s: partition 0 error %d hwm %d, %d record bytes", what, p0.ErrorCode, p0.HighWatermark, len(p0.RecordBatches))
			}
		}
	}
}
