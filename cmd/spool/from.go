package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// fromVocabulary is what --from (consume) and --to (group reset-offsets)
// accept, as kcat's -o does.
const fromVocabulary = "beginning|earliest, end|latest, OFFSET, -N (the last N records), time:RFC3339 or time:-DURATION (e.g. time:-1h)"

// fromKind is how a position is given.
type fromKind int

const (
	fromStart  fromKind = iota // beginning, earliest
	fromEnd                    // end, latest
	fromOffset                 // an absolute offset, clamped to the partition's range
	fromLast                   // the last N records of each partition
	fromTime                   // the first record at or after a time
)

// position is a parsed --from.
type position struct {
	kind   fromKind
	offset int64     // fromOffset: the offset; fromLast: N
	time   time.Time // fromTime
}

// parsePosition reads s in fromVocabulary; relative times count back from now.
func parsePosition(s string, now time.Time) (position, error) {
	bad := func(why string) (position, error) {
		return position{}, fmt.Errorf("%q: %s; want %s", s, why, fromVocabulary)
	}
	switch strings.ToLower(s) {
	case "beginning", "earliest", "start", "oldest":
		return position{kind: fromStart}, nil
	case "end", "latest", "newest":
		return position{kind: fromEnd}, nil
	}
	if t, ok := strings.CutPrefix(s, "time:"); ok {
		if at, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return position{kind: fromTime, time: at}, nil
		}
		d, err := time.ParseDuration(t)
		if err != nil {
			return bad("not an RFC 3339 time nor a duration")
		}
		if d > 0 {
			return bad("a relative time counts back: time:-" + t)
		}
		return position{kind: fromTime, time: now.Add(d)}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return bad("not a position")
	}
	if strings.HasPrefix(s, "-") {
		if n == 0 {
			return bad("-0 is no count of records")
		}
		return position{kind: fromLast, offset: -n}, nil
	}
	return position{kind: fromOffset, offset: n}, nil
}

// needsTimeLookup tells whether resolving p asks the brokers for offsets by time.
func (p position) needsTimeLookup() bool { return p.kind == fromTime }

// resolve turns p into an offset within [start, end] of one partition;
// byTime is the partition's offset for p's time (-1: none at or after it).
func (p position) resolve(start, end, byTime int64) int64 {
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
