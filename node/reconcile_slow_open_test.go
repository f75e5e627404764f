package node

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
)

// While a CreateTopics is held opening its partition (as on a slow disk),
// the node goes on serving everything that does not need that partition:
// produce to another topic is acknowledged, a second CreateTopics returns
// with its own partition open, AlterConfigs and a produce that auto-creates
// a topic are answered. Once the open goes on, the first create returns too.
func TestSlowPartitionOpenHoldsUpNoOtherTopic(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "steady", 1, nil)
	ctx := testCtx(t)
	cl := newClient(t, n, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "steady", Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(topic string, _ int32) {
		if topic != "slow" {
			return
		}
		once.Do(func() { close(entered) })
		<-release
	}
	hosted.OpenHook.Store(&hook)
	unhold := sync.OnceFunc(func() { close(release); hosted.OpenHook.Store(nil) })
	t.Cleanup(unhold)

	// The held create has a connection of its own: a connection's
	// responses go in order, whatever the broker does meanwhile.
	slowAdm := newAdmin(t, n)
	slowDone := make(chan error, 1)
	go func() {
		_, err := slowAdm.CreateTopic(ctx, 1, 1, nil, "slow")
		slowDone <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the create never reached its partition's open")
	}

	within := func(what string, f func(context.Context) error) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := f(wctx); err != nil {
			t.Fatalf("%s while another topic's partition is held opening: %v", what, err)
		}
	}
	within("produce to another topic", func(ctx context.Context) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "steady", Value: []byte("during")}).FirstErr()
	})
	within("create another topic", func(ctx context.Context) error {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, "other")
		if err == nil {
			err = r.Err
		}
		if err == nil && n.parts.Get("other", 0) == nil {
			t.Error("CreateTopics returned before its partition was open")
		}
		return err
	})
	within("alter another topic's configs", func(ctx context.Context) error {
		rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("3600000")}}, "steady")
		if err == nil {
			_, err = rs.On("steady", nil)
		}
		return err
	})
	within("produce that auto-creates a topic", func(ctx context.Context) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "auto-during", Value: []byte("x")}).FirstErr()
	})
	select {
	case err := <-slowDone:
		t.Fatalf("the held create returned before its open went on: %v", err)
	default:
	}
	unhold()
	if err := <-slowDone; err != nil {
		t.Fatalf("the held create, once its open went on: %v", err)
	}
	if n.parts.Get("slow", 0) == nil {
		t.Fatal("the held create returned without its partition open")
	}
}
