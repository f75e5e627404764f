package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// plural is "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// joinInt32s is "1, 4, 7" for a sorted copy of ps.
func joinInt32s(ps []int32) string {
	ps = slices.Clone(ps)
	slices.Sort(ps)
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", ")
}

// partitionWord is "partition 3" or "partitions 1, 4".
func partitionWord(ps []int32) string {
	if len(ps) == 1 {
		return fmt.Sprintf("partition %d", ps[0])
	}
	return "partitions " + joinInt32s(ps)
}

// explain turns the errors an outage brings into one short line an operator
// can act on; Kafka's own descriptions (a "leadership election" for a node
// that is simply down) mislead more than they help.
func explain(err error) string {
	var ke *kerr.Error
	switch {
	case errors.Is(err, kerr.LeaderNotAvailable), errors.Is(err, kerr.NotLeaderForPartition):
		return "no leader: the nodes of its replicas are down or unreachable"
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return "unknown topic or partition"
	case errors.Is(err, kerr.CoordinatorNotAvailable), errors.Is(err, kerr.CoordinatorLoadInProgress):
		return "group coordinator not available (its __consumer_offsets partition has no live leader or is loading)"
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within --timeout"
	case errors.Is(err, kgo.ErrRecordTimeout):
		return "not acknowledged within --timeout"
	case errors.Is(err, kgo.ErrRecordRetries):
		return "failed after retries"
	case errors.As(err, &ke):
		return ke.Message
	}
	return err.Error()
}

func joinSemi(parts []string) string { return strings.Join(parts, "; ") }
