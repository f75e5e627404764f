package share

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is an in-flight record's state.
type State uint8

// The states of KIP-932. Acknowledged and Archived are terminal: the SPSO
// moves past a run of them at the window's start.
const (
	Available State = iota
	Acquired
	Acknowledged
	Archived
)

func (s State) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	}
	return "archived"
}

// Acknowledge types, as the wire carries them.
const (
	AckGap     int8 = 0 // not a record (a compaction gap, a control record): archived
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4 // v2 (KIP-1222): the lock is renewed
)

// record is one offset of the window.
type record struct {
	state      State
	deliveries int16
	owner      string // the member holding it, while Acquired
	deadline   int64  // its lock's end (UnixNano), while Acquired
	// pending is the acknowledgement (type+1) being made durable, while
	// Acquired: the record keeps its owner and cannot lapse meanwhile.
	pending int8
}

const pendingNone int8 = 0

// Range is a run of acquired offsets with one delivery count, as
// ShareFetch's AcquiredRecords lists them.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// sharePartition is one share group's state on one partition: the SPSO
// and the window of in-flight records above it, recs[i] being offset
// spso+i. The window's end, spso+len(recs), is the SPEO.
type sharePartition struct {
	mu          sync.Mutex
	initialized bool
	spso        int64
	recs        []record
	acquired    int   // records Acquired in recs
	nextExpiry  int64 // the earliest deadline of an Acquired record; 0 when none
	lastTouched int64 // UnixNano of the last fetch or acknowledgement
	// loadedEpoch is the partition leader epoch the state was loaded in
	// (-1: never): a leader that lost the partition and won it back
	// reloads, as another leader may have moved it on meanwhile.
	loadedEpoch int32
	// writer is a token (capacity 1) held from a snapshot's taking to its
	// write, so a partition's snapshots reach the store in order. It is
	// not the state's lock: fetches go on while a write is out.
	writer chan struct{}
}

func newSharePartition() *sharePartition {
	return &sharePartition{loadedEpoch: -1, writer: make(chan struct{}, 1)}
}

func (sp *sharePartition) end() int64 { return sp.spso + int64(len(sp.recs)) }

// inFlightLocked counts the window's records still to be settled:
// acquired, or available for redelivery (a lapsed lock not yet expired
// is acquired; it counts either way). The window is at most
// Config.MaxInFlight records, so the walk is short.
func (sp *sharePartition) inFlightLocked() int {
	n := 0
	for i := range sp.recs {
		if s := sp.recs[i].state; s == Available || s == Acquired {
			n++
		}
	}
	return n
}

// initLocked places a new share partition's SPSO by the group's reset.
func (sp *sharePartition) initLocked(start, upTo int64, cfg GroupConfig) {
	if sp.initialized {
		return
	}
	sp.initialized = true
	if cfg.ResetEarliest {
		sp.spso = start
	} else {
		sp.spso = upTo
	}
}

// clampLocked moves the SPSO up to the log start when retention or
// DeleteRecords took records from below it: they can never be delivered.
func (sp *sharePartition) clampLocked(start int64) {
	if sp.spso >= start {
		return
	}
	drop := min(start-sp.spso, int64(len(sp.recs)))
	for i := int64(0); i < drop; i++ {
		if sp.recs[i].state == Acquired {
			sp.acquired--
		}
	}
	sp.recs = sp.recs[drop:]
	sp.spso = start
	if len(sp.recs) == 0 {
		sp.recs = nil
	}
}

// releaseLocked ends rec's acquisition: available again, or archived when
// it has been delivered the limit of times.
func (sp *sharePartition) releaseLocked(rec *record, limit int, st *Stats) {
	if rec.state == Acquired {
		sp.acquired--
	}
	rec.owner, rec.deadline = "", 0
	if int(rec.deliveries) >= limit {
		rec.state = Archived
		st.Archived.Add(1)
		return
	}
	rec.state = Available
}

// expireLocked releases every lock whose deadline is past now. It scans
// the window only when the earliest deadline has come.
func (sp *sharePartition) expireLocked(now int64, limit int, st *Stats) {
	if sp.nextExpiry == 0 || now < sp.nextExpiry {
		return
	}
	var next int64
	for i := range sp.recs {
		rec := &sp.recs[i]
		if rec.state != Acquired {
			continue
		}
		if rec.deadline <= now && rec.pending == pendingNone {
			st.LockExpiries.Add(1)
			sp.releaseLocked(rec, limit, st)
			continue
		}
		if next == 0 || rec.deadline < next {
			next = rec.deadline
		}
	}
	sp.nextExpiry = next
	sp.advanceLocked()
}

// advanceLocked moves the SPSO past the terminal records at the window's
// start.
func (sp *sharePartition) advanceLocked() {
	k := 0
	for k < len(sp.recs) && (sp.recs[k].state == Acknowledged || sp.recs[k].state == Archived) {
		k++
	}
	if k == 0 {
		return
	}
	sp.spso += int64(k)
	sp.recs = sp.recs[k:]
	if len(sp.recs) == 0 {
		sp.recs = nil
	} else if cap(sp.recs) > 2*len(sp.recs)+64 {
		sp.recs = append([]record(nil), sp.recs...) // let the old array go
	}
}

// planLocked is where a fetch must start reading, and false when there is
// nothing it could acquire: no available record in the window, and the
// window full or at upTo.
func (sp *sharePartition) planLocked(upTo int64, maxInFlight int) (int64, bool) {
	for i := range sp.recs {
		if sp.recs[i].state == Available {
			return sp.spso + int64(i), true
		}
	}
	end := sp.end()
	return end, len(sp.recs) < maxInFlight && end < upTo
}

// acquireLocked acquires for member, from batches (read from the log at
// the offset planLocked gave, below upTo), up to maxRecords records:
// available ones in the window, then new ones past its end while it has
// room. Control records, and aborted transactional ones when the group
// reads committed, enter the window archived, never delivered. It
// returns the acquired ranges and the batches holding them.
func (sp *sharePartition) acquireLocked(member string, batches []Batch, aborted []Aborted, upTo int64, now int64, cfg GroupConfig, maxInFlight, maxRecords int, st *Stats) ([]Range, [][]byte) {
	var (
		ranges []Range
		raws   [][]byte
		count  int
		// producers whose aborted transaction is open at the batch read
		open = map[int64]bool{}
		ai   int
	)
	deadline := now + cfg.LockDuration.Nanoseconds()
	take := func(o int64, rec *record) {
		rec.state, rec.owner, rec.deadline = Acquired, member, deadline
		rec.deliveries++
		sp.acquired++
		count++
		st.Acquired.Add(1)
		if rec.deliveries > 1 {
			st.Redelivered.Add(1)
		}
		if n := len(ranges); n > 0 && ranges[n-1].Last == o-1 && ranges[n-1].DeliveryCount == rec.deliveries {
			ranges[n-1].Last = o
		} else {
			ranges = append(ranges, Range{First: o, Last: o, DeliveryCount: rec.deliveries})
		}
	}
batches:
	for _, b := range batches {
		h := b.Header
		base, last := h.BaseOffset, h.LastOffset()
		for ai < len(aborted) && aborted[ai].FirstOffset <= last {
			open[aborted[ai].ProducerID] = true
			ai++
		}
		undeliverable := h.Control() || (cfg.ReadCommitted && h.Transactional() && open[h.ProducerID])
		if h.Control() {
			delete(open, h.ProducerID) // its marker ends the transaction, aborted or not
		}
		if count >= maxRecords {
			break
		}
		took := false
		for o := max(base, sp.spso); o <= last && o < upTo && count < maxRecords; o++ {
			if o < sp.end() {
				if rec := &sp.recs[o-sp.spso]; rec.state == Available {
					take(o, rec)
					took = true
				}
				continue
			}
			// Past the window: offsets the log skipped (compaction) are
			// filled in archived, then the record itself joins.
			for sp.end() < o {
				if len(sp.recs) >= maxInFlight {
					break batches
				}
				sp.recs = append(sp.recs, record{state: Archived})
			}
			if len(sp.recs) >= maxInFlight {
				break batches
			}
			if undeliverable {
				sp.recs = append(sp.recs, record{state: Archived})
				continue
			}
			sp.recs = append(sp.recs, record{})
			take(o, &sp.recs[len(sp.recs)-1])
			took = true
		}
		if took {
			raws = append(raws, b.Raw)
		}
	}
	if count > 0 && (sp.nextExpiry == 0 || deadline < sp.nextExpiry) {
		sp.nextExpiry = deadline
	}
	sp.advanceLocked()
	return ranges, raws
}

// AckBatch is one acknowledgement batch: Types holds one type for the
// whole range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// checkAcks validates batches for member without changing anything, as
// Kafka applies a partition's acknowledgements all or none:
// INVALID_REQUEST for a malformed batch, INVALID_RECORD_STATE for a
// record member does not hold (past the window, below the SPSO, or
// another's).
func (sp *sharePartition) checkAcks(member string, batches []AckBatch, maxType int8) *kerr.Error {
	prev := int64(-1)
	for _, b := range batches {
		n := b.Last - b.First + 1
		if b.First < 0 || b.First > b.Last || b.First <= prev || len(b.Types) == 0 || (len(b.Types) > 1 && int64(len(b.Types)) != n) {
			return kerr.InvalidRequest
		}
		for _, t := range b.Types {
			if t < 0 || t > maxType {
				return kerr.InvalidRequest
			}
		}
		prev = b.Last
		if b.Last >= sp.end() {
			return kerr.InvalidRecordState
		}
		for o := b.First; o <= b.Last; o++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			if o < sp.spso {
				// Finished already: a member whose lock lapsed must not
				// be told its acknowledgement of a record another member
				// acknowledged went through.
				if t == AckGap {
					continue
				}
				return kerr.InvalidRecordState
			}
			rec := sp.recs[o-sp.spso]
			if t == AckGap && rec.state == Archived {
				continue // a gap the window already knows
			}
			if rec.state != Acquired || rec.owner != member || rec.pending != pendingNone {
				return kerr.InvalidRecordState
			}
		}
	}
	return nil
}

// markAcksLocked takes batches checkAcks accepted: RENEW at once, the
// others as pending until resolveLocked, and tells whether any is
// pending (so a snapshot must be written).
func (sp *sharePartition) markAcksLocked(batches []AckBatch, now int64, cfg GroupConfig) bool {
	any := false
	for _, b := range batches {
		for o := max(b.First, sp.spso); o <= b.Last; o++ {
			rec := &sp.recs[o-sp.spso]
			if rec.state != Acquired {
				continue
			}
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			if t == AckRenew {
				rec.deadline = now + cfg.LockDuration.Nanoseconds()
				if sp.nextExpiry == 0 || rec.deadline < sp.nextExpiry {
					sp.nextExpiry = rec.deadline
				}
				continue
			}
			rec.pending = t + 1
			any = true
		}
	}
	return any
}

// resolveLocked ends the pending acknowledgements: taken when durable is
// set, else dropped (the records stay with their member, their locks
// running again).
func (sp *sharePartition) resolveLocked(durable bool, now int64, cfg GroupConfig, st *Stats) {
	for i := range sp.recs {
		rec := &sp.recs[i]
		if rec.pending == pendingNone {
			continue
		}
		t := rec.pending - 1
		rec.pending = pendingNone
		if !durable {
			if rec.deadline <= now {
				rec.deadline = now + 1 // lapses at the next touch
			}
			if sp.nextExpiry == 0 || rec.deadline < sp.nextExpiry {
				sp.nextExpiry = rec.deadline
			}
			continue
		}
		switch t {
		case AckAccept:
			rec.state, rec.owner, rec.deadline = Acknowledged, "", 0
			sp.acquired--
			st.Acknowledged.Add(1)
		case AckRelease:
			st.Released.Add(1)
			sp.releaseLocked(rec, cfg.DeliveryLimit, st)
		default: // reject, gap
			rec.state, rec.owner, rec.deadline = Archived, "", 0
			sp.acquired--
			if t == AckReject {
				st.Rejected.Add(1)
			}
		}
	}
	sp.advanceLocked()
}

// releaseMemberLocked releases every record member holds (its share
// session closed).
func (sp *sharePartition) releaseMemberLocked(member string, limit int, st *Stats) {
	for i := range sp.recs {
		if rec := &sp.recs[i]; rec.state == Acquired && rec.owner == member && rec.pending == pendingNone {
			st.Released.Add(1)
			sp.releaseLocked(rec, limit, st)
		}
	}
	sp.advanceLocked()
}

// stateAt is offset o's state and delivery count, for tests and Describe.
func (sp *sharePartition) stateAt(o int64) (State, int16, bool) {
	if o < sp.spso || o >= sp.end() {
		return 0, 0, false
	}
	r := sp.recs[o-sp.spso]
	return r.state, r.deliveries, true
}
