package share

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Snapshot is a share partition's durable state: its SPSO and, above it,
// each in-flight record's state and delivery count, run-length coded. A
// record acquired when the snapshot was taken is kept as available (as
// archived when that was its last delivery): locks do not outlive the
// leader that granted them. Epoch is the partition
// leader epoch of the leader that wrote it; the store refuses a write
// from an epoch older than the newest it has (a deposed leader's).
type Snapshot struct {
	Epoch int32
	SPSO  int64
	Runs  []Run
}

// Run is Count consecutive records of one state and delivery count.
type Run struct {
	State      State
	Deliveries int16
	Count      uint32
}

// snapshotVersion is the first byte of an encoded Snapshot.
const snapshotVersion = 1

// MaxSnapshotRuns bounds a decoded snapshot: a window of MaxInFlight
// records has at most that many runs; 65536 leaves room for any bound an
// operator sets.
const MaxSnapshotRuns = 1 << 16

var errSnapshot = errors.New("bad share-partition snapshot")

// Encode is the snapshot's bytes: version, epoch, SPSO, run count, and
// per run its state, delivery count and length.
func (s Snapshot) Encode() []byte {
	b := make([]byte, 0, 1+4+8+4+len(s.Runs)*7)
	b = append(b, snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.SPSO))
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Runs)))
	for _, r := range s.Runs {
		b = append(b, byte(r.State))
		b = binary.BigEndian.AppendUint16(b, uint16(r.Deliveries))
		b = binary.BigEndian.AppendUint32(b, r.Count)
	}
	return b
}

// DecodeSnapshot reads what Encode wrote, checking every bound.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	var s Snapshot
	if len(b) < 17 || b[0] != snapshotVersion {
		return s, fmt.Errorf("%w: %d bytes", errSnapshot, len(b))
	}
	s.Epoch = int32(binary.BigEndian.Uint32(b[1:]))
	s.SPSO = int64(binary.BigEndian.Uint64(b[5:]))
	n := binary.BigEndian.Uint32(b[13:])
	b = b[17:]
	if s.SPSO < 0 || n > MaxSnapshotRuns || uint64(len(b)) != uint64(n)*7 {
		return s, fmt.Errorf("%w: spso %d, %d runs in %d bytes", errSnapshot, s.SPSO, n, len(b))
	}
	var total uint64
	for i := uint32(0); i < n; i++ {
		r := Run{State: State(b[0]), Deliveries: int16(binary.BigEndian.Uint16(b[1:])), Count: binary.BigEndian.Uint32(b[3:])}
		b = b[7:]
		if r.State > Archived || r.State == Acquired || r.Deliveries < 0 || r.Count == 0 {
			return s, fmt.Errorf("%w: run %d: state %d, deliveries %d, count %d", errSnapshot, i, r.State, r.Deliveries, r.Count)
		}
		total += uint64(r.Count)
		if total > 1<<24 {
			return s, fmt.Errorf("%w: window of %d records", errSnapshot, total)
		}
		s.Runs = append(s.Runs, r)
	}
	return s, nil
}

// snapshotLocked is sp's state as it will be once the pending
// acknowledgements are durable.
func (sp *sharePartition) snapshotLocked(epoch int32, limit int) Snapshot {
	s := Snapshot{Epoch: epoch, SPSO: sp.spso}
	// The SPSO as it will be: past a leading run of records that are, or
	// are about to be, terminal.
	k := 0
	for ; k < len(sp.recs); k++ {
		st := effectiveState(sp.recs[k], limit)
		if st != Acknowledged && st != Archived {
			break
		}
	}
	s.SPSO += int64(k)
	for _, rec := range sp.recs[k:] {
		st := effectiveState(rec, limit)
		if st == Acquired {
			// The lock dies with this leader: the record is what its
			// lapse would make it, available again, or archived once
			// delivered the limit of times (Partitions.Fetch writes a
			// snapshot before such a last delivery leaves).
			st = Available
			if int(rec.deliveries) >= limit {
				st = Archived
			}
		}
		if n := len(s.Runs); n > 0 && s.Runs[n-1].State == st && s.Runs[n-1].Deliveries == rec.deliveries {
			s.Runs[n-1].Count++
			continue
		}
		s.Runs = append(s.Runs, Run{State: st, Deliveries: rec.deliveries, Count: 1})
	}
	return s
}

// effectiveState is rec's state with its pending acknowledgement taken.
func effectiveState(rec record, limit int) State {
	switch rec.pending {
	case pendingNone:
		return rec.state
	case AckAccept + 1:
		return Acknowledged
	case AckRelease + 1:
		if int(rec.deliveries) >= limit {
			return Archived
		}
		return Available
	}
	return Archived // reject, gap
}

// restoreLocked replaces sp's state by s (every lock gone).
func (sp *sharePartition) restoreLocked(s Snapshot) {
	sp.initialized = true
	sp.spso = s.SPSO
	sp.recs = nil
	sp.acquired, sp.nextExpiry = 0, 0
	for _, r := range s.Runs {
		for range r.Count {
			sp.recs = append(sp.recs, record{state: r.State, deliveries: r.Deliveries})
		}
	}
	sp.advanceLocked()
}
