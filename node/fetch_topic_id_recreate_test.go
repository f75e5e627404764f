package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// A Fetch by topic id (v13+) resolves the id to a name when it comes in; a
// long poll may outlive the topic's delete and re-create under that name
// (a new id). Its next read must answer UNKNOWN_TOPIC_ID, not the new
// incarnation's records under the old id.
func TestFetchByIDAcrossRecreate(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "r", 1, nil)
	old, _ := n.catalog.Topic("r")

	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.SessionEpoch = 13, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = old.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	names := fetchTopicNames(n.catalog, req) // as handleFetch does once, before its waits

	if r, err := adm.DeleteTopics(testCtx(t), "r"); err != nil || r["r"].Err != nil {
		t.Fatalf("delete: %v %v", err, r["r"].Err)
	}
	createTopic(t, adm, "r", 1, nil)
	cur, _ := n.catalog.Topic("r")
	if cur.ID == old.ID {
		t.Fatal("the re-created topic kept its id")
	}
	retry.Run(t, 10*time.Second, func() error {
		if p := n.parts.Get("r", 0); p == nil || p.TopicID != cur.ID {
			return errors.New("the new incarnation is not open yet")
		}
		return nil
	})
	if err := newClient(t, n).ProduceSync(testCtx(t), &kgo.Record{Topic: "r", Value: []byte("new incarnation")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	resp, size, _ := n.fetchOnce(req, names, nil, n.access.ListenerName(context.Background()))
	defer resp.Release()
	fp := resp.Topics[0].Partitions[0]
	if fp.ErrorCode != kerr.UnknownTopicID.Code || size != 0 {
		t.Fatalf("fetch by the old id after the re-create: error %d, %d record bytes; want UNKNOWN_TOPIC_ID and none", fp.ErrorCode, size)
	}
}
