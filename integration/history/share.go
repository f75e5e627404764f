package history

import (
	"fmt"
	"sort"
	"sync"
)

// Share groups (KIP-932): what share consumers were told about their
// acknowledgements, checked against what the group still delivers at the
// end. The promise: every record is acknowledged exactly once or is still
// available — none lost, none acknowledged twice.
//
//   - a record whose acceptance the broker confirmed to two deliveries is
//     acknowledged twice;
//   - a confirmed record the final drain is given again was redelivered
//     after its acknowledgement;
//   - a record neither confirmed nor drained is lost, unless an
//     acknowledgement of it had an unknown outcome (the connection broke
//     before the answer: it may have been taken).

// ShareHistory records one share group's acknowledgements.
type ShareHistory struct {
	mu        sync.Mutex
	sent      map[string]bool
	confirmed map[string][]string // value -> consumers told their accept was taken
	unsure    map[string]bool
	drained   map[string]int
}

// NewShare returns an empty share history.
func NewShare() *ShareHistory {
	return &ShareHistory{sent: map[string]bool{}, confirmed: map[string][]string{}, unsure: map[string]bool{}, drained: map[string]int{}}
}

// Sent records a value produced (and acknowledged by the producer).
func (h *ShareHistory) Sent(value string) { h.mu.Lock(); h.sent[value] = true; h.mu.Unlock() }

// Confirmed records that consumer was told its accept of value was taken.
func (h *ShareHistory) Confirmed(consumer, value string) {
	h.mu.Lock()
	h.confirmed[value] = append(h.confirmed[value], consumer)
	h.mu.Unlock()
}

// Unsure records an accept of value whose outcome is unknown.
func (h *ShareHistory) Unsure(value string) { h.mu.Lock(); h.unsure[value] = true; h.mu.Unlock() }

// Drained records value delivered to the final drain.
func (h *ShareHistory) Drained(value string) { h.mu.Lock(); h.drained[value]++; h.mu.Unlock() }

// ConfirmedCount is how many distinct values were confirmed.
func (h *ShareHistory) ConfirmedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.confirmed)
}

// ShareResult is what CheckShare found.
type ShareResult struct {
	Sent, Confirmed, Drained, Unsure  int
	Twice, Redelivered, Lost, Phantom []string
}

// OK tells whether the promise held.
func (r ShareResult) OK() bool {
	return len(r.Twice)+len(r.Redelivered)+len(r.Lost)+len(r.Phantom) == 0
}

func (r ShareResult) String() string {
	s := fmt.Sprintf("%d sent, %d confirmed, %d drained, %d unsure", r.Sent, r.Confirmed, r.Drained, r.Unsure)
	for _, v := range []struct {
		name string
		vals []string
	}{{"acknowledged twice", r.Twice}, {"redelivered after acknowledgement", r.Redelivered}, {"lost", r.Lost}, {"phantom", r.Phantom}} {
		if len(v.vals) > 0 {
			sort.Strings(v.vals)
			s += fmt.Sprintf("; %d %s (first %v)", len(v.vals), v.name, v.vals[:min(5, len(v.vals))])
		}
	}
	return s
}

// CheckShare proves the promise over everything recorded.
func (h *ShareHistory) CheckShare() ShareResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := ShareResult{Sent: len(h.sent), Confirmed: len(h.confirmed), Drained: len(h.drained), Unsure: len(h.unsure)}
	for v, who := range h.confirmed {
		if len(who) > 1 {
			r.Twice = append(r.Twice, fmt.Sprintf("%s by %v", v, who))
		}
		if h.drained[v] > 0 {
			r.Redelivered = append(r.Redelivered, v)
		}
		if !h.sent[v] {
			r.Phantom = append(r.Phantom, v)
		}
	}
	for v := range h.drained {
		if !h.sent[v] {
			r.Phantom = append(r.Phantom, v)
		}
	}
	for v := range h.sent {
		if len(h.confirmed[v]) == 0 && h.drained[v] == 0 && !h.unsure[v] {
			r.Lost = append(r.Lost, v)
		}
	}
	return r
}
