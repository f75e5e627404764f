package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sirupsen/logrus"
)

// InternalTopic is a coordinator's internal topic as it is created on
// first use.
type InternalTopic struct {
	Name       string
	Partitions int32
	// ReplicationFactor is the configured factor; the cluster caps it
	// (Broker.ClusterFactor) so that every node creating the topic
	// concurrently makes the same spec, derives one topic id, and none of
	// them loses what it committed.
	ReplicationFactor int
	Configs           map[string]string
}

// internalTopicConfigs keep the newest record of every key forever: the
// coordinators' topics are compacted (offsets.topic's cleanup.policy),
// never trimmed by retention.
var internalTopicConfigs = map[string]string{
	"cleanup.policy":  "compact",
	"retention.ms":    "-1",
	"retention.bytes": "-1",
	"segment.bytes":   strconv.Itoa(100 << 20), // offsets.topic.segment.bytes
}

// Host is one coordinator on this node: made once, on first use, after its
// internal topic exists, and the partitions of that topic this node leads
// loaded (replayed) into it in the leader epoch it leads in.
//
// Locks: createMu, held across the topic's creation and the coordinator's
// making, once per node (a failed one is retried), waited on only by the
// coordinator's first requests; loads' per-partition locks (loads.go).
type Host[C any] struct {
	b     Broker
	topic InternalTopic
	// needs, if set, makes what the coordinator needs first (the
	// transaction coordinator commits offsets: __consumer_offsets).
	needs func() error
	// make builds the coordinator once its topic exists.
	make func() (C, error)
	// close, if set, closes the coordinator with the node's other loops;
	// such a coordinator is not made once the node is closing.
	close func(C)
	// loader is the coordinator as its partitions are loaded.
	loader func(C) Loader
	what   string // for logs: "consumer groups", "transactions"...
	log    logrus.FieldLogger

	createMu sync.Mutex
	made     atomic.Pointer[C] // nil until made
	loads    partitionLoads
}

// Current is the coordinator if it was made, without making it.
func (h *Host[C]) Current() (C, bool) {
	if c := h.made.Load(); c != nil {
		return *c, true
	}
	var zero C
	return zero, false
}

// Get returns the coordinator, creating its topic and making it on first
// use.
func (h *Host[C]) Get() (C, error) {
	var zero C
	if h.close != nil && h.b.Closing() {
		return zero, errors.New("node shutting down")
	}
	if c, ok := h.Current(); ok {
		return c, nil
	}
	h.createMu.Lock()
	defer h.createMu.Unlock()
	if c, ok := h.Current(); ok {
		return c, nil
	}
	// A failure leaves the coordinator unmade, so a later request tries
	// again rather than the node failing its requests forever.
	if h.needs != nil {
		if err := h.needs(); err != nil {
			return zero, err
		}
	}
	if _, ok := h.b.Topic(h.topic.Name); !ok {
		rf := h.b.ClusterFactor(h.topic.ReplicationFactor)
		if err := h.b.CreateTopic(h.topic.Name, h.topic.Partitions, rf, h.topic.Configs); err != nil {
			return zero, fmt.Errorf("create %s: %w", h.topic.Name, err)
		}
	}
	c, err := h.make()
	if err != nil {
		return zero, err
	}
	h.made.Store(&c)
	// The coordinator closes with the node's other loops; made during
	// Shutdown, it closes at once.
	if h.close != nil && !h.b.Go(func(ctx context.Context) {
		<-ctx.Done()
		h.close(c)
	}) {
		h.close(c)
	}
	return c, nil
}

// Ensure loads partition p of the topic into c if this node leads it, and
// unloads it if it no longer does (see ensure, loads.go).
func (h *Host[C]) Ensure(c C, p int32) error {
	return ensure(h.b, h.log, h.topic.Name, h.loader(c), &h.loads, p, h.what)
}
