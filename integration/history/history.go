// Package history records what clients were told by a Spool cluster under
// faults, and checks it against what the cluster holds afterwards: the
// Jepsen-style proof behind DESIGN.md's "What is promised".
//
// Producers record every record they hand to a client (a unique value, in
// the order they hand them over) and what the client said about it: acked
// at a partition and offset, failed with a definite error (the broker
// refused it, so it can never have been appended), or unknown (a timeout, a
// lost connection, a closed client: it may or may not be in the log). At
// the end a reader records every record of every partition from the start,
// and Check proves:
//
//   - every acknowledged record is read back exactly once, on the partition
//     and at the offset it was acknowledged at (else lost, duplicated or
//     offset mismatch);
//   - acknowledged records of one producer on one partition are in the
//     order the producer sent them, both in the acknowledgements and in the
//     log (else reordered);
//   - nothing appears that was never sent (phantom), nothing that failed
//     definitely appears, and an unknown record appears at most once;
//   - committed consumer-group offsets never go backwards: each commit the
//     broker acknowledged, and each committed offset read back, is at least
//     the highest commit acknowledged before the request was sent.
//
// A History is safe for use from many goroutines.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Outcome is what a producer was told about one record.
type Outcome int

const (
	// Unknown: no answer, a timeout or a closed client; the record may be
	// in the log, at most once.
	Unknown Outcome = iota
	// Acked: acknowledged (acks=all) at a partition and offset.
	Acked
	// Failed: refused with a definite error; it must not be in the log.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	default:
		return "unknown"
	}
}

// send is one record handed to a client.
type send struct {
	producer  string
	seq       int // order in which producer handed records over
	value     string
	outcome   Outcome
	partition int32
	offset    int64
	err       string
}

// read is one record read back by the final reader.
type read struct {
	partition int32
	offset    int64
	value     string
}

// GroupKey names one committed offset: a group's position in a partition.
type GroupKey struct {
	Group     string
	Topic     string
	Partition int32
}

func (k GroupKey) String() string { return fmt.Sprintf("%s %s/%d", k.Group, k.Topic, k.Partition) }

// offsetEvent is a commit acknowledged or a committed offset read back.
type offsetEvent struct {
	key     GroupKey
	offset  int64
	fetched bool      // read back by OffsetFetch, else a commit acknowledged
	mark    Mark      // events recorded before the request was sent
	at      time.Time // when recorded, for the report
}

// Mark is a point in the sequence of recorded offset events; take one
// before sending an OffsetCommit or OffsetFetch.
type Mark int

// History is the record of one run.
type History struct {
	mu      sync.Mutex
	sends   map[string]*send
	seqs    map[string]int
	reads   []read
	offsets []offsetEvent
	events  int // len(offsets), for marks
	seen    map[string]int
}

// New returns an empty history.
func New() *History {
	return &History{sends: map[string]*send{}, seqs: map[string]int{}, seen: map[string]int{}}
}

// Send records that producer handed a record with this value to its client.
// Values must be unique across the history; call Send in the order the
// producer hands records to the client.
func (h *History) Send(producer, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.sends[value]; dup {
		panic(fmt.Sprintf("history: value %q sent twice", value)) // a bug in the test, not the broker
	}
	h.sends[value] = &send{producer: producer, seq: h.seqs[producer], value: value, partition: -1, offset: -1}
	h.seqs[producer]++
}

// Acked records that value was acknowledged at partition and offset; an
// offset of -1 says the client did not report it (kcat), so only the
// partition, the count and the order are checked.
func (h *History) Acked(value string, partition int32, offset int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.mustSend(value)
	s.outcome, s.partition, s.offset = Acked, partition, offset
}

// Failed records that value failed: definitely (the broker refused it, it
// can never be appended) or not (its outcome is unknown).
func (h *History) Failed(value string, err error, definite bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.mustSend(value)
	s.outcome, s.err = Unknown, fmt.Sprint(err)
	if definite {
		s.outcome = Failed
	}
}

func (h *History) mustSend(value string) *send {
	s, ok := h.sends[value]
	if !ok {
		panic(fmt.Sprintf("history: outcome for value %q that was never sent", value))
	}
	return s
}

// AckedOffsets lists the offsets acknowledged on partition so far (in no
// particular order), so a reader knows how far it must read.
func (h *History) AckedOffsets(partition int32) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int64
	for _, s := range h.sends {
		if s.outcome == Acked && s.partition == partition && s.offset >= 0 {
			out = append(out, s.offset)
		}
	}
	return out
}

// Read records a record read back from partition at offset by the final
// reader, which reads every partition from its start in offset order.
func (h *History) Read(partition int32, offset int64, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads = append(h.reads, read{partition, offset, value})
}

// Mark returns the point reached in offset events; take it before
// sending an OffsetCommit or OffsetFetch and pass it with the answer.
func (h *History) Mark() Mark {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Mark(h.events)
}

// Committed records that a commit of offset for key, sent after mark, was
// acknowledged.
func (h *History) Committed(key GroupKey, offset int64, mark Mark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offsets = append(h.offsets, offsetEvent{key: key, offset: offset, mark: mark, at: time.Now()})
	h.events = len(h.offsets)
}

// Fetched records that an OffsetFetch sent after mark answered offset for
// key (-1: no committed offset).
func (h *History) Fetched(key GroupKey, offset int64, mark Mark) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offsets = append(h.offsets, offsetEvent{key: key, offset: offset, fetched: true, mark: mark, at: time.Now()})
	h.events = len(h.offsets)
}

// Result counts what Check found; Problems names each violation (the first
// hundred).
type Result struct {
	Sent, Acked, Failed, Unknown int
	Read                         int // records read back
	Checked                      int // acknowledged records found intact
	UnknownPresent               int // unknown outcomes found once (allowed)
	Lost                         int // acknowledged, not read back
	Duplicated                   int // read back more than once
	Reordered                    int // out of the producer's order
	OffsetMismatch               int // read back elsewhere than acknowledged
	Phantom                      int // read back, never sent
	FailedPresent                int // failed definitely, read back
	Commits, OffsetFetches       int
	OffsetRegressions            int // a committed offset went backwards
	Problems                     []string
}

// OK tells whether the history shows no violation.
func (r Result) OK() bool {
	return r.Lost+r.Duplicated+r.Reordered+r.OffsetMismatch+r.Phantom+r.FailedPresent+r.OffsetRegressions == 0
}

// String is the one-line summary tests print.
func (r Result) String() string {
	return fmt.Sprintf("sent %d (acked %d, failed %d, unknown %d), read %d: checked %d, unknown present %d; lost %d, duplicated %d, reordered %d, offset mismatch %d, phantom %d, failed present %d; group offsets: %d commits, %d fetches, %d regressions",
		r.Sent, r.Acked, r.Failed, r.Unknown, r.Read, r.Checked, r.UnknownPresent,
		r.Lost, r.Duplicated, r.Reordered, r.OffsetMismatch, r.Phantom, r.FailedPresent,
		r.Commits, r.OffsetFetches, r.OffsetRegressions)
}

func (r *Result) problem(format string, args ...any) {
	if len(r.Problems) < 100 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Report is the summary followed by every problem, one a line.
func (r Result) Report() string {
	var b strings.Builder
	b.WriteString(r.String())
	for _, p := range r.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// Check checks the history; call it once every producer, committer and the
// final reader are done.
func (h *History) Check() Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	var r Result
	r.Sent = len(h.sends)
	for _, s := range h.sends {
		switch s.outcome {
		case Acked:
			r.Acked++
		case Failed:
			r.Failed++
		default:
			r.Unknown++
		}
	}
	h.checkReads(&r)
	h.checkAckOrder(&r)
	h.checkOffsets(&r)
	return r
}

// checkReads checks every record read back against what was sent.
func (h *History) checkReads(r *Result) {
	r.Read = len(h.reads)
	found := map[string][]read{}
	lastOffset := map[int32]int64{}
	for _, rd := range h.reads {
		if last, ok := lastOffset[rd.partition]; ok && rd.offset <= last {
			r.Duplicated++
			r.problem("partition %d: offset %d read after offset %d (the log repeats or goes back)", rd.partition, rd.offset, last)
		}
		lastOffset[rd.partition] = rd.offset
		found[rd.value] = append(found[rd.value], rd)
	}
	for value, rds := range found {
		s, ok := h.sends[value]
		if !ok {
			r.Phantom += len(rds)
			r.problem("phantom: %q read at %d/%d was never sent", value, rds[0].partition, rds[0].offset)
			continue
		}
		if len(rds) > 1 {
			r.Duplicated += len(rds) - 1
			r.problem("duplicate: %s %q read %d times, at %s", s.outcome, value, len(rds), where(rds))
		}
		switch s.outcome {
		case Failed:
			r.FailedPresent++
			r.problem("failed definitely (%s) but present: %q at %s", s.err, value, where(rds))
		case Unknown:
			if len(rds) == 1 {
				r.UnknownPresent++
			}
		case Acked:
			if rds[0].partition != s.partition || s.offset >= 0 && rds[0].offset != s.offset {
				r.OffsetMismatch++
				r.problem("offset mismatch: %q acked at %d/%d, read at %s", value, s.partition, s.offset, where(rds))
			} else if len(rds) == 1 {
				r.Checked++
			}
		}
	}
	for _, s := range h.sends {
		if s.outcome == Acked && len(found[s.value]) == 0 {
			r.Lost++
			r.problem("lost: %q acked at %d/%d, not read back", s.value, s.partition, s.offset)
		}
	}
	// Order in the log: per producer and partition, the acknowledged
	// records read back follow the producer's order. (Unknown ones are left
	// out: a client without idempotence may legitimately reorder a retry.)
	type pp struct {
		producer  string
		partition int32
	}
	lastAcked := map[pp]*send{}
	for _, rd := range h.reads {
		s, ok := h.sends[rd.value]
		if !ok || s.outcome != Acked {
			continue
		}
		k := pp{s.producer, rd.partition}
		if prev := lastAcked[k]; prev != nil && s.seq < prev.seq {
			r.Reordered++
			r.problem("reordered in the log: %q (sent #%d) at %d/%d after %q (sent #%d)", s.value, s.seq, rd.partition, rd.offset, prev.value, prev.seq)
			continue
		}
		lastAcked[k] = s
	}
}

// checkAckOrder checks that acknowledgements of one producer on one
// partition have offsets in the producer's order.
func (h *History) checkAckOrder(r *Result) {
	type pp struct {
		producer  string
		partition int32
	}
	acked := map[pp][]*send{}
	for _, s := range h.sends {
		if s.outcome == Acked && s.offset >= 0 {
			k := pp{s.producer, s.partition}
			acked[k] = append(acked[k], s)
		}
	}
	for k, ss := range acked {
		slices.SortFunc(ss, func(a, b *send) int { return cmp.Compare(a.seq, b.seq) })
		for i := 1; i < len(ss); i++ {
			if ss[i].offset <= ss[i-1].offset {
				r.Reordered++
				r.problem("reordered acks: producer %s partition %d: %q (sent #%d) acked at %d, %q (sent #%d) at %d",
					k.producer, k.partition, ss[i-1].value, ss[i-1].seq, ss[i-1].offset, ss[i].value, ss[i].seq, ss[i].offset)
			}
		}
	}
}

// checkOffsets checks that no committed offset goes below a commit
// acknowledged before the request was sent.
func (h *History) checkOffsets(r *Result) {
	for i, ev := range h.offsets {
		if ev.fetched {
			r.OffsetFetches++
		} else {
			r.Commits++
		}
		floor, from := int64(-1), -1
		for j := 0; j < int(ev.mark) && j < i; j++ {
			prev := h.offsets[j]
			if !prev.fetched && prev.key == ev.key && prev.offset > floor {
				floor, from = prev.offset, j
			}
		}
		if ev.offset < floor {
			r.OffsetRegressions++
			what := "commit acknowledged"
			if ev.fetched {
				what = "offset fetched"
			}
			r.problem("group offset went back: %s: %s %d at %s, after commit #%d of %d was acknowledged at %s",
				ev.key, what, ev.offset, ev.at.UTC().Format("15:04:05.000"), from, floor, h.offsets[from].at.UTC().Format("15:04:05.000"))
		}
	}
}

func where(rds []read) string {
	parts := make([]string, len(rds))
	for i, rd := range rds {
		parts[i] = fmt.Sprintf("%d/%d", rd.partition, rd.offset)
	}
	return strings.Join(parts, ", ")
}
