package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// meter counts records and bytes as they complete and prints a progress line
// once a second.
type meter struct {
	name    string
	records atomic.Int64
	bytes   atomic.Int64
	errors  atomic.Int64
	latency *histogram
	start   time.Time
}

func newMeter(name string) *meter {
	return &meter{name: name, latency: newHistogram(), start: time.Now()}
}

func (m *meter) add(records, bytes int64) {
	m.records.Add(records)
	m.bytes.Add(bytes)
}

// progress prints one line a second to the run's log until the returned
// function is called, which stops it and waits.
func (m *meter) progress(r *Run) (stop func()) {
	if r.Quiet || r.Log == nil {
		return func() {}
	}
	w := r.Log
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastRecords, lastBytes int64
		last := m.start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				recs, byts := m.records.Load(), m.bytes.Load()
				dt := now.Sub(last).Seconds()
				line := fmt.Sprintf("%s %5.0fs: %10.0f records/s %8.2f MB/s  total %d records",
					m.name, now.Sub(m.start).Seconds(), float64(recs-lastRecords)/dt, float64(byts-lastBytes)/dt/1e6, recs)
				if l := m.latency.summary(""); l.Samples > 0 {
					line += fmt.Sprintf("  p99 %.3f ms", l.P99)
				}
				if e := m.errors.Load(); e > 0 {
					line += fmt.Sprintf("  %d errors", e)
				}
				fmt.Fprintln(w, line)
				lastRecords, lastBytes, last = recs, byts, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// result is what the meter counted over elapsed; latencyWhat names what its
// latencies measure.
func (m *meter) result(elapsed time.Duration, latencyWhat string) Result {
	r := newResult(m.name, m.records.Load(), m.bytes.Load(), elapsed)
	r.Errors = m.errors.Load()
	if l := m.latency.summary(latencyWhat); l.Samples > 0 {
		r.Latency = &l
	}
	return r
}

// measure runs f under the run's bounds with m's clock and progress line
// running, and returns how long it took.
func (m *meter) measure(ctx context.Context, r *Run, f func(ctx context.Context) error) (time.Duration, error) {
	rctx, cancel := r.context(ctx)
	defer cancel()
	m.start = time.Now()
	stop := m.progress(r)
	err := f(rctx)
	elapsed := time.Since(m.start)
	stop()
	return elapsed, err
}
