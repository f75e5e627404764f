package history

import "fmt"

// Restored says partition was rebuilt from a copy of its log that ends at
// end (a tiered partition restored from its store after every replica lost
// its disk): the records acknowledged at or past end were never uploaded
// and are gone by design, and they must not be read back either (the
// restored log numbers new records from end). Check then holds them to
// that, as records that failed definitely. It returns how many
// acknowledged records it set aside.
func (h *History) Restored(partition int32, end int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.sends {
		if s.outcome == Acked && s.partition == partition && s.offset >= end {
			s.outcome, s.err = Failed, fmt.Sprintf("acknowledged at %d, past the restored end %d", s.offset, end)
			n++
		}
	}
	return n
}
