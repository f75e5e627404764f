package client

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FromVocabulary is what --from (consume) and --to (group reset-offsets)
// accept, as kcat's -o does.
const FromVocabulary = "beginning|earliest, end|latest, OFFSET, -N (the last N records), time:RFC3339 or time:-DURATION (e.g. time:-1h)"

// fromKind is how a Position is given.
type fromKind int

const (
	fromStart  fromKind = iota // beginning, earliest
	fromEnd                    // end, latest
	fromOffset                 // an absolute offset, clamped to the partition's range
	fromLast                   // the last N records of each partition
	fromTime                   // the first record at or after a time
)

// Position is a parsed --from or --to: where to start in each partition.
type Position struct {
	kind   fromKind
	offset int64     // fromOffset: the offset; fromLast: N
	time   time.Time // fromTime
}

// ParsePosition reads s in FromVocabulary; relative times count back from now.
func ParsePosition(s string, now time.Time) (Position, error) {
	bad := func(why string) (Position, error) {
		return Position{}, fmt.Errorf("%q: %s; want %s", s, why, FromVocabulary)
	}
	switch strings.ToLower(s) {
	case "beginning", "earliest", "start", "oldest":
		return Position{kind: fromStart}, nil
	case "end", "latest", "newest":
		return Position{kind: fromEnd}, nil
	}
	if t, ok := strings.CutPrefix(s, "time:"); ok {
		if at, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return Position{kind: fromTime, time: at}, nil
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return bad("not an RFC 3339 time nor a duration")
		}
		if d > 0 {
			return bad("a relative time counts back: time:-" + t)
		}
		return Position{kind: fromTime, time: now.Add(d)}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return bad("not a position")
	}
	if strings.HasPrefix(s, "-") {
		if n == 0 {
			return bad("-0 is no count of records")
		}
		return Position{kind: fromLast, offset: -n}, nil
	}
	return Position{kind: fromOffset, offset: n}, nil
}

// needsTimeLookup tells whether resolving p asks the brokers for offsets by time.
func (p Position) needsTimeLookup() bool { return p.kind == fromTime }

// Resolve turns p into an offset within [start, end] of one partition;
// byTime is the partition's offset for p's time (-1: none at or after it).
func (p Position) Resolve(start, end, byTime int64) int64 {
	switch p.kind {
	case fromStart:
		return start
	case fromEnd:
		return end
	case fromLast:
		return max(end-p.offset, start)
	case fromTime:
		if byTime < 0 || byTime > end {
			return end // nothing at or after that time
		}
		return max(byTime, start)
	default:
		return min(max(p.offset, start), end)
	}
}
