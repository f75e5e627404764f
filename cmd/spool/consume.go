package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeOpts are consume's flags.
type consumeOpts struct {
	from      string
	count     int
	follow    bool
	printKeys bool
	keySep    string
	partition int32
	group     string
}

func newConsumeCmd(g *globals) *cobra.Command {
	var o consumeOpts
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic, one value per line",
		Long: `Print records of a topic, one value per line (key, separator, value with
--print-keys). --from is where to start in each partition: beginning (or
earliest), end (or latest), an offset, -N for the last N records, or time:
with an RFC 3339 time or a duration back from now (time:-1h). Without
--follow it stops at the end offsets seen when it started; -n stops after N
records.

Only the partitions read are asked for: with --partition, that one; for the
whole topic, the partitions whose leader is down are named on stderr, the
others are read, and the exit status is non-zero once it stops.

With --group, it joins that consumer group and commits its progress as it
goes (and when it stops); --from then applies only to partitions the group
has no committed offset for.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd.Context(), g, args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "beginning", "where to start: "+fromVocabulary)
	cmd.Flags().IntVarP(&o.count, "count", "n", 0, "stop after this many records (0: no limit)")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep waiting for new records instead of stopping at the end")
	cmd.Flags().BoolVar(&o.printKeys, "print-keys", false, "print each record's key and --key-separator before its value")
	cmd.Flags().StringVar(&o.keySep, "key-separator", "\t", "what --print-keys puts between key and value")
	cmd.Flags().Int32Var(&o.partition, "partition", -1, "read only this partition (-1: all)")
	cmd.Flags().StringVarP(&o.group, "group", "g", "", "consume as a member of this consumer group, committing offsets as it goes")
	cmd.RegisterFlagCompletionFunc("group", completeGroups(g))
	return cmd
}

func runConsume(ctx context.Context, g *globals, topic string, o consumeOpts, stdout, stderr io.Writer) error {
	if o.count < 0 {
		return fmt.Errorf("-n %d: want a number of records, or 0 for no limit", o.count)
	}
	if o.partition < -1 {
		return fmt.Errorf("--partition %d: want a partition number, or -1 for all", o.partition)
	}
	if o.group != "" && o.partition >= 0 {
		return errors.New("--group and --partition exclude each other: a group assigns partitions to its members")
	}
	pos, err := parsePosition(o.from, time.Now())
	if err != nil {
		return fmt.Errorf("--from %w", err)
	}
	acl, err := g.client(ctx)
	if err != nil {
		return err
	}
	defer acl.Close()
	adm := kadm.NewClient(acl)
	var want []int32
	if o.partition >= 0 {
		want = []int32{o.partition}
	}
	lctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	_, live, down, err := topicPartitions(lctx, adm, topic, want)
	if err != nil {
		return err
	}
	ranges := partitionRanges(lctx, acl, topic, live, pos, down)
	if o.partition >= 0 && len(down) > 0 {
		return fmt.Errorf("%s", describeDown(topic, down))
	}
	if len(down) > 0 {
		fmt.Fprintf(stderr, "spool: %s; reading the others\n", describeDown(topic, down))
	}
	if len(ranges) == 0 {
		return fmt.Errorf("nothing to read: %s", describeDown(topic, down))
	}

	var opts []kgo.Opt
	starts := map[int32]int64{}
	if o.group == "" {
		offsets := map[int32]kgo.Offset{}
		for p, r := range ranges {
			starts[p] = pos.resolve(r.start, r.end, r.byTime)
			offsets[p] = kgo.NewOffset().At(starts[p])
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	} else {
		committed, err := adm.FetchOffsets(lctx, o.group)
		if err != nil {
			return fmt.Errorf("committed offsets of group %s: %w", o.group, err)
		}
		for p, r := range ranges {
			starts[p] = pos.resolve(r.start, r.end, r.byTime)
			if c, ok := committed.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
				starts[p] = c.At
			}
		}
		opts = append(opts, kgo.ConsumerGroup(o.group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(resetOffset(pos)),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second))
	}
	pending := map[int32]int64{} // partition -> end offset still to reach
	for p, r := range ranges {
		if starts[p] < r.end {
			pending[p] = r.end
		}
	}
	incomplete := func() error {
		if len(down) > 0 {
			return fmt.Errorf("not everything was read: %s", describeDown(topic, down))
		}
		return nil
	}
	if !o.follow && len(pending) == 0 {
		return incomplete()
	}
	a := &assignment{}
	if o.group != "" {
		opts = append(opts, kgo.OnPartitionsAssigned(a.assigned), kgo.OnPartitionsRevoked(a.revoked), kgo.OnPartitionsLost(a.revoked))
	}
	cl, err := g.client(ctx, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.group != "" {
		// Commit what was printed, whatever way this ends.
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), g.timeout)
			defer cancel()
			cl.CommitMarkedOffsets(cctx)
		}()
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	printed := 0
	for {
		pctx, pcancel := ctx, context.CancelFunc(func() {})
		if o.group != "" && !o.follow {
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
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			if stop {
				return
			}
			if o.printKeys {
				out.Write(r.Key)
				out.WriteString(o.keySep)
			}
			out.Write(r.Value)
			out.WriteByte('\n')
			printed++
			if o.group != "" {
				cl.MarkCommitRecords(r)
			}
			if e, ok := pending[r.Partition]; ok && r.Offset+1 >= e {
				delete(pending, r.Partition)
			}
			if o.count > 0 && printed >= o.count {
				stop = true
			}
		})
		if err := out.Flush(); err != nil {
			return err
		}
		if stop {
			return nil
		}
		if !o.follow && a.caughtUp(o.group != "", pending) {
			return incomplete()
		}
	}
}

// resetOffset is where a group starts a partition it has no offset for.
func resetOffset(pos position) kgo.Offset {
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
