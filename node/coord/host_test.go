package coord

import (
	"context"
	"errors"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/hosted"
)

// fakeBroker is a Broker with a catalog of names only and no partitions
// here: what Host needs to create its topic and to refuse loads.
type fakeBroker struct {
	Broker    // the rest panics: not used by these tests
	topics    map[string]Topic
	created   []InternalTopic
	createErr error
	closing   bool
	halted    bool // Go refuses, as after the node's loops stopped
	leaderErr *kerr.Error
}

func (b *fakeBroker) Closing() bool { return b.closing }

func (b *fakeBroker) Topic(name string) (Topic, bool) {
	t, ok := b.topics[name]
	return t, ok
}

func (b *fakeBroker) ClusterFactor(configured int) int16 { return int16(configured) - 2 }

func (b *fakeBroker) CreateTopic(name string, partitions int32, rf int16, configs map[string]string) error {
	if b.createErr != nil {
		return b.createErr
	}
	b.created = append(b.created, InternalTopic{Name: name, Partitions: partitions, ReplicationFactor: int(rf), Configs: configs})
	b.topics[name] = Topic{Partitions: partitions}
	return nil
}

func (b *fakeBroker) Go(fn func(ctx context.Context)) bool { return !b.halted }

func (b *fakeBroker) Leader(topic string, p int32) (*hosted.Partition, *kerr.Error) {
	return nil, b.leaderErr
}

type fakeCoord struct{ closed, unloaded int }

func (c *fakeCoord) Loaded(p, epoch int32) bool { return false }
func (c *fakeCoord) Load(p, epoch int32) error  { return nil }
func (c *fakeCoord) Unload(p int32)             { c.unloaded++ }

func newTestHost(b *fakeBroker, made *int) *Host[*fakeCoord] {
	return &Host[*fakeCoord]{
		b: b, log: logrus.New(), what: "test",
		topic: InternalTopic{Name: "__test", Partitions: 4, ReplicationFactor: 5, Configs: internalTopicConfigs},
		make: func() (*fakeCoord, error) {
			*made++
			return &fakeCoord{}, nil
		},
		close:  func(c *fakeCoord) { c.closed++ },
		loader: func(c *fakeCoord) Loader { return c },
	}
}

// The topic is created once, with the factor the cluster gives the
// configured one; a failed creation leaves nothing made, and the next
// request tries again.
func TestHostCreatesTopicOnceAndRetriesAFailure(t *testing.T) {
	b := &fakeBroker{topics: map[string]Topic{}, createErr: errors.New("disk full")}
	var made int
	h := newTestHost(b, &made)
	if _, err := h.Get(); err == nil {
		t.Fatal("Get with the topic's creation failing: no error")
	}
	if _, ok := h.Current(); ok || made != 0 {
		t.Fatalf("after a failed creation: made %d times, current %v", made, ok)
	}
	b.createErr = nil
	c, err := h.Get()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := h.Get(); again != c || made != 1 {
		t.Fatalf("second Get: made %d times, same coordinator %v", made, again == c)
	}
	if len(b.created) != 1 || b.created[0].ReplicationFactor != 3 || b.created[0].Partitions != 4 || b.created[0].Configs["cleanup.policy"] != "compact" {
		t.Fatalf("created %+v, want one __test of 4 partitions, factor 3, compacted", b.created)
	}
}

// A coordinator that closes with the node is not made once the node is
// closing, and one made as the node's loops stop closes at once.
func TestHostClosesWithTheNode(t *testing.T) {
	b := &fakeBroker{topics: map[string]Topic{"__test": {Partitions: 4}}, closing: true}
	var made int
	h := newTestHost(b, &made)
	if _, err := h.Get(); err == nil || made != 0 {
		t.Fatalf("Get while closing: %v, made %d times", err, made)
	}
	b.closing, b.halted = false, true
	c, err := h.Get()
	if err != nil {
		t.Fatal(err)
	}
	if c.closed != 1 || len(b.created) != 0 {
		t.Fatalf("made after the loops stopped: closed %d times, topics created %v", c.closed, b.created)
	}
}

// A partition this node does not lead is NOT_COORDINATOR, and unloaded; no
// leader known is COORDINATOR_NOT_AVAILABLE.
func TestHostEnsureRefusesPartitionsLedElsewhere(t *testing.T) {
	b := &fakeBroker{topics: map[string]Topic{"__test": {Partitions: 4}}, leaderErr: kerr.NotLeaderForPartition}
	var made int
	h := newTestHost(b, &made)
	c, err := h.Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Ensure(c, 1); !errors.Is(err, kerr.NotCoordinator) || c.unloaded != 1 {
		t.Fatalf("led elsewhere: %v, unloaded %d times", err, c.unloaded)
	}
	b.leaderErr = kerr.LeaderNotAvailable
	if err := h.Ensure(c, 1); Code(err) != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("no leader: %v", err)
	}
	if Code(nil) != 0 || Code(errors.New("other")) != kerr.CoordinatorNotAvailable.Code {
		t.Fatal("Code of nil or of a plain error")
	}
}
