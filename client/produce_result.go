package client

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ProduceResult is what Produce learned of its records: how many each
// partition acknowledged, and which were not written and why.
type ProduceResult struct {
	Topic   string
	Total   int              // records read from the input
	Acked   map[int32]int    // partition -> records written
	Failed  []ProduceFailure // by partition, then reason
	Timeout time.Duration    // how long acknowledgements were waited for
}

// ProduceFailure is how many records a partition did not take, and why.
type ProduceFailure struct {
	Partition int32 // -1: no partition was chosen
	Records   int
	Reason    string
}

// Written is how many records were acknowledged.
func (r ProduceResult) Written() int {
	n := 0
	for _, v := range r.Acked {
		n += v
	}
	return n
}

// Unanswered is how many records got no answer within Timeout: they may or
// may not be written.
func (r ProduceResult) Unanswered() int {
	n := r.Total - r.Written()
	for _, f := range r.Failed {
		n -= f.Records
	}
	return n
}

// String is "3 records to T (partition 0: 2, partition 2: 1)" and, when some
// failed, which partitions did not take how many and why.
func (r ProduceResult) String() string {
	written := r.Written()
	var b strings.Builder
	if written == r.Total {
		fmt.Fprintf(&b, "%s to %s", plural(written, "record"), r.Topic)
	} else {
		fmt.Fprintf(&b, "%d of %s written", written, plural(r.Total, "record"))
	}
	if written > 0 {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(r.Acked)) {
			parts = append(parts, fmt.Sprintf("partition %d: %d", p, r.Acked[p]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	if written == r.Total {
		return b.String()
	}
	var parts []string
	for _, f := range r.Failed {
		where := fmt.Sprintf("partition %d", f.Partition)
		if f.Partition < 0 {
			where = "no partition chosen"
		}
		parts = append(parts, fmt.Sprintf("%s: %d, %s", where, f.Records, f.Reason))
	}
	if rest := r.Unanswered(); rest > 0 {
		parts = append(parts, fmt.Sprintf("%d without an answer within --timeout %v (may or may not be written)", rest, r.Timeout))
	}
	fmt.Fprintf(&b, "; not written: %s", strings.Join(parts, "; "))
	return b.String()
}
