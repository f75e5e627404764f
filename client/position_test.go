package client

import (
	"strings"
	"testing"
	"time"
)

func TestParsePositionVocabulary(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	// start, end, byTime of one partition: offsets 10..50, the time lookup
	// finding offset 30.
	const start, end, byTime = 10, 50, 30
	for _, c := range []struct {
		in   string
		want int64
		at   time.Time
	}{
		{"beginning", 10, time.Time{}},
		{"earliest", 10, time.Time{}},
		{"end", 50, time.Time{}},
		{"latest", 50, time.Time{}},
		{"0", 10, time.Time{}},  // below the log start: clamped
		{"25", 25, time.Time{}}, // inside
		{"99", 50, time.Time{}}, // past the end: clamped
		{"-5", 45, time.Time{}}, // the last 5
		{"-500", 10, time.Time{}},
		{"time:2026-11-30T11:00:00Z", 30, time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
		{"time:-1h", 30, now.Add(-time.Hour)},
		{"time:-90m", 30, now.Add(-90 * time.Minute)},
	} {
		p, err := ParsePosition(c.in, now)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := p.Resolve(start, end, byTime); got != c.want {
			t.Errorf("%q resolves to %d, want %d", c.in, got, c.want)
		}
		if !c.at.IsZero() && !p.time.Equal(c.at) {
			t.Errorf("%q: time %v, want %v", c.in, p.time, c.at)
		}
	}
}

func TestParsePositionRejects(t *testing.T) {
	for _, in := range []string{"", "start-ish", "-0", "time:", "time:yesterday", "time:1h", "12abc"} {
		_, err := ParsePosition(in, time.Now())
		if err == nil {
			t.Errorf("%q accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), "time:-DURATION") {
			t.Errorf("%q: error does not list the vocabulary: %v", in, err)
		}
	}
}

func TestPositionByTimeWithNothingAfter(t *testing.T) {
	p, _ := ParsePosition("time:-1h", time.Now())
	if got := p.Resolve(0, 7, -1); got != 7 {
		t.Errorf("no record after the time: start at %d, want the end 7", got)
	}
}
