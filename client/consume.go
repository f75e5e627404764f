package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ConsumeOptions is what Consume reads, from where, and where it goes.
type ConsumeOptions struct {
	Topic string
	// From is where to start in each partition, in FromVocabulary. With a
	// Group it applies only to partitions the group has no offset for.
	From string
	// Count stops after this many records (0: no limit).
	Count int
	// Follow keeps waiting for new records instead of stopping at the end
	// offsets seen at the start.
	Follow bool
	// Partition reads only that partition (-1: all).
	Partition int32
	// Group, when set, consumes as a member of this consumer group and
	// commits what Records took, as it goes and when it stops.
	Group string
	// ShareGroup, when set, consumes as a member of this share group
	// (KIP-932): records are split among its members one by one, each
	// accepted once Records took it; From and Partition do not apply.
	ShareGroup string
	// Records is given each poll's records in order; an error stops Consume.
	Records func([]*kgo.Record) error
	// Warn is told, before reading, which partitions are unavailable while
	// the others are read.
	Warn func(msg string)
}

// Consume reads a topic. Only the partitions read are asked for: with a
// Partition, that one; for the whole topic, those whose leader is down are
// named (Warn), the others are read, and once it stops Consume returns an
// error naming them. It returns nil when ctx ends.
func (g Config) Consume(ctx context.Context, o ConsumeOptions) error {
	pos, err := o.check()
	if err != nil {
		return err
	}
	if o.ShareGroup != "" {
		return g.consumeShare(ctx, o) // consume_share.go
	}
	acl, err := g.Kafka(ctx)
	if err != nil {
		return err
	}
	defer acl.Close()
	plan, err := g.planConsume(ctx, acl, o, pos)
	if err != nil || (!o.Follow && len(plan.pending) == 0) {
		return cmpOr(err, plan.incomplete())
	}
	cl, err := g.Kafka(ctx, plan.opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.Group != "" {
		// Commit what was taken, whatever way this ends.
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), g.Timeout)
			defer cancel()
			cl.CommitMarkedOffsets(cctx)
		}()
	}
	return plan.read(ctx, cl, o)
}

// check validates o and parses its position.
func (o ConsumeOptions) check() (Position, error) {
	if o.Count < 0 {
		return Position{}, fmt.Errorf("-n %d: want a number of records, or 0 for no limit", o.Count)
	}
	if o.Partition < -1 {
		return Position{}, fmt.Errorf("--partition %d: want a partition number, or -1 for all", o.Partition)
	}
	if o.ShareGroup != "" && (o.Group != "" || o.Partition >= 0) {
		return Position{}, errors.New("--share-group excludes --group and --partition: a share group reads every partition together")
	}
	if o.Group != "" && o.Partition >= 0 {
		return Position{}, errors.New("--group and --partition exclude each other: a group assigns partitions to its members")
	}
	pos, err := ParsePosition(o.From, time.Now())
	if err != nil {
		return Position{}, fmt.Errorf("--from %w", err)
	}
	return pos, nil
}

// consumePlan is what a consume reads: the client options that start each
// partition where it should, the end offsets to reach, and the partitions
// left out because their leader is down.
type consumePlan struct {
	topic   string
	opts    []kgo.Opt
	pending map[int32]int64 // partition -> end offset still to reach
	down    map[int32]error
	a       *assignment
}

// planConsume asks only the partitions to read for their ranges, and
// resolves where each starts: at pos, or at the group's committed offset.
func (g Config) planConsume(ctx context.Context, acl *kgo.Client, o ConsumeOptions, pos Position) (consumePlan, error) {
	plan := consumePlan{topic: o.Topic, pending: map[int32]int64{}, a: &assignment{}}
	adm := kadm.NewClient(acl)
	var want []int32
	if o.Partition >= 0 {
		want = []int32{o.Partition}
	}
	lctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	_, live, down, err := topicPartitions(lctx, adm, o.Topic, want)
	if err != nil {
		return plan, err
	}
	ranges := partitionRanges(lctx, acl, o.Topic, live, pos, down)
	if o.Partition >= 0 && len(down) > 0 {
		return plan, fmt.Errorf("%s", describeDown(o.Topic, down))
	}
	if len(down) > 0 && o.Warn != nil {
		o.Warn(describeDown(o.Topic, down) + "; reading the others")
	}
	if len(ranges) == 0 {
		return plan, fmt.Errorf("nothing to read: %s", describeDown(o.Topic, down))
	}
	plan.down = down
	starts := map[int32]int64{}
	if o.Group == "" {
		offsets := map[int32]kgo.Offset{}
		for p, r := range ranges {
			starts[p] = pos.Resolve(r.start, r.end, r.byTime)
			offsets[p] = kgo.NewOffset().At(starts[p])
		}
		plan.opts = append(plan.opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: offsets}))
	} else {
		committed, err := adm.FetchOffsets(lctx, o.Group)
		if err != nil {
			return plan, fmt.Errorf("committed offsets of group %s: %w", o.Group, err)
		}
		for p, r := range ranges {
			starts[p] = pos.Resolve(r.start, r.end, r.byTime)
			if c, ok := committed.Lookup(o.Topic, p); ok && c.Err == nil && c.At >= 0 {
				starts[p] = c.At
			}
		}
		a := plan.a
		plan.opts = append(plan.opts, kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topic),
			kgo.ConsumeResetOffset(resetOffset(pos)),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second),
			kgo.OnPartitionsAssigned(a.assigned), kgo.OnPartitionsRevoked(a.revoked), kgo.OnPartitionsLost(a.revoked))
	}
	for p, r := range ranges {
		if starts[p] < r.end {
			plan.pending[p] = r.end
		}
	}
	return plan, nil
}

// incomplete is the error of a consume that left partitions out.
func (plan consumePlan) incomplete() error {
	if len(plan.down) > 0 {
		return fmt.Errorf("not everything was read: %s", describeDown(plan.topic, plan.down))
	}
	return nil
}

// read polls until Count records are taken, ctx ends, or (without Follow)
// the partitions read reach their end offsets.
func (plan consumePlan) read(ctx context.Context, cl *kgo.Client, o ConsumeOptions) error {
	taken := 0
	for {
		pctx, pcancel := ctx, context.CancelFunc(func() {})
		if o.Group != "" && !o.Follow {
			// The partitions this member is given may have nothing left
			// to read: look at the assignment again now and then rather
			// than wait for records that will not come.
			pctx, pcancel = context.WithTimeout(ctx, 500*time.Millisecond)
		}
		fetches := cl.PollFetches(pctx)
		pcancel()
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %s", t, p, explain(err))
			}
		})
		if ferr != nil {
			return ferr
		}
		var batch []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if o.Count > 0 && taken >= o.Count {
				return
			}
			batch = append(batch, r)
			taken++
			if e, ok := plan.pending[r.Partition]; ok && r.Offset+1 >= e {
				delete(plan.pending, r.Partition)
			}
		})
		if len(batch) > 0 {
			if err := o.Records(batch); err != nil {
				return err
			}
			if o.Group != "" {
				cl.MarkCommitRecords(batch...)
			}
		}
		if o.Count > 0 && taken >= o.Count {
			return nil
		}
		if !o.Follow && plan.a.caughtUp(o.Group != "", plan.pending) {
			return plan.incomplete()
		}
	}
}

// resetOffset is where a group starts a partition it has no offset for.
func resetOffset(pos Position) kgo.Offset {
	switch pos.kind {
	case fromEnd:
		return kgo.NewOffset().AtEnd()
	case fromOffset:
		return kgo.NewOffset().At(pos.offset)
	case fromLast:
		return kgo.NewOffset().AtEnd().Relative(-pos.offset)
	case fromTime:
		return kgo.NewOffset().AfterMilli(pos.time.UnixMilli())
	default:
		return kgo.NewOffset().AtStart()
	}
}

// assignment is the partitions a group member holds, so a non-following
// group consume stops once those (not the whole topic's) are read up to the
// end offsets seen at start.
type assignment struct {
	mu    sync.Mutex
	known bool
	parts map[int32]bool
}

func (a *assignment) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parts == nil {
		a.parts = map[int32]bool{}
	}
	a.known = true
	for _, ps := range m {
		for _, p := range ps {
			a.parts[p] = true
		}
	}
}

func (a *assignment) revoked(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ps := range m {
		for _, p := range ps {
			delete(a.parts, p)
		}
	}
}

// caughtUp: without a group, every pending partition is read; in a group,
// every assigned partition is.
func (a *assignment) caughtUp(inGroup bool, pending map[int32]int64) bool {
	if !inGroup {
		return len(pending) == 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.known {
		return false
	}
	for _, p := range slices.Collect(maps.Keys(a.parts)) {
		if _, ok := pending[p]; ok {
			return false
		}
	}
	return true
}
