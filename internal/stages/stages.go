// Package stages times the steps of one replicated append (handler, Raft
// round, transport write, follower round, commit, wake-up) when the
// environment variable SPOOL_RAFT_STAGES is set, and logs each step's
// p50/p99/max every 10 s: a debugging aid to see where the latency of an
// acks=all record goes. Off, Record costs one branch.
package stages

import (
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// On is whether stages are recorded (SPOOL_RAFT_STAGES set at start).
var On = os.Getenv("SPOOL_RAFT_STAGES") != ""

// maxSamples bounds each stage's samples between two reports.
const maxSamples = 100_000

var (
	mu      sync.Mutex
	samples = map[string][]time.Duration{}
	once    sync.Once
)

// Record notes one sample of stage name.
func Record(name string, d time.Duration) {
	if !On {
		return
	}
	once.Do(func() { go report() })
	mu.Lock()
	if s := samples[name]; len(s) < maxSamples {
		samples[name] = append(s, d)
	}
	mu.Unlock()
}

// Since is Record(name, time.Since(t)), for a t that is not zero.
func Since(name string, t time.Time) {
	if On && !t.IsZero() {
		Record(name, time.Since(t))
	}
}

func report() {
	for range time.Tick(10 * time.Second) {
		mu.Lock()
		cur := samples
		samples = map[string][]time.Duration{}
		mu.Unlock()
		names := make([]string, 0, len(cur))
		for n := range cur {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s := cur[n]
			slices.Sort(s)
			logrus.WithFields(logrus.Fields{"stage": n, "n": len(s), "p50_us": s[len(s)/2].Microseconds(),
				"p99_us": s[len(s)*99/100].Microseconds(), "max_us": s[len(s)-1].Microseconds()}).Info("raft stage")
		}
	}
}
