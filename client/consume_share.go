package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shareIdle is how long a non-following share consume waits with nothing
// delivered before it stops: a share group has no end offsets to reach
// (records come back when locks lapse), so quiet is the end.
const shareIdle = 2 * time.Second

// consumeShare reads o.Topic as a member of share group o.ShareGroup
// (KIP-932): each record Records takes is accepted; a batch Records
// fails is released for redelivery. Where a new group starts is its
// share.auto.offset.reset, not --from.
func (g Config) consumeShare(ctx context.Context, o ConsumeOptions) error {
	cl, err := g.Kafka(ctx, kgo.ConsumeTopics(o.Topic), kgo.ShareGroup(o.ShareGroup))
	if err != nil {
		return err
	}
	defer cl.Close()
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), g.Timeout)
		defer cancel()
		_ = cl.FlushAcks(fctx)
	}()
	taken := 0
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if !o.Follow {
			pctx, cancel = context.WithTimeout(ctx, shareIdle)
		}
		fetches := cl.PollFetches(pctx)
		quiet := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
				ferr = fmt.Errorf("share fetch %s/%d: %s", t, p, explain(err))
			}
		})
		if ferr != nil {
			return ferr
		}
		var batch []*kgo.Record
		for _, r := range fetches.Records() {
			if o.Count > 0 && taken >= o.Count {
				r.Ack(kgo.AckRelease) // not taken: for another member
				continue
			}
			batch = append(batch, r)
			taken++
		}
		if len(batch) > 0 {
			if err := o.Records(batch); err != nil {
				for _, r := range batch {
					r.Ack(kgo.AckRelease)
				}
				return err
			}
			for _, r := range batch {
				r.Ack(kgo.AckAccept)
			}
		}
		if o.Count > 0 && taken >= o.Count {
			return nil
		}
		if quiet && len(batch) == 0 && !o.Follow {
			return nil
		}
	}
}
