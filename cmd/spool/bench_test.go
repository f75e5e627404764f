package main

import (
	"encoding/json"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"
)

// runBenchJSON runs a bench command with -o json and decodes its report.
func runBenchJSON(t *testing.T, args ...string) benchReport {
	t.Helper()
	out, errOut, err := runCLI(t, "", append(args, "-o", "json", "-q")...)
	if err != nil {
		t.Fatalf("spool %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	var rep benchReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("spool %s printed no JSON report: %v\n%s", strings.Join(args, " "), err, out)
	}
	return rep
}

func resultNamed(t *testing.T, rep benchReport, name string) benchResult {
	t.Helper()
	for _, r := range rep.Results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("report of %s has no %q result: %+v", rep.Command, name, rep.Results)
	return benchResult{}
}

func TestHistogramQuantilesWithinBucketError(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	h := newHistogram()
	var samples []int64
	for i := 0; i < 100000; i++ {
		// Spread over six decades, as latencies are.
		v := int64(float64(time.Microsecond) * (1 + rng.ExpFloat64()*rng.Float64()*1e5))
		samples = append(samples, v)
		h.record(time.Duration(v))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := samples[int(q*float64(len(samples)))-1]
		got := int64(h.quantile(q))
		if diff := got - exact; diff < 0 && -diff > exact/32 || diff > 0 && diff > exact/32 {
			t.Errorf("q%.3f: got %v, exact %v (more than 1/32 off)", q, time.Duration(got), time.Duration(exact))
		}
	}
	if got, want := h.quantile(1), time.Duration(samples[len(samples)-1]); got != want {
		t.Errorf("q1 = %v, want the max %v", got, want)
	}
}

func TestHistogramBucketsAreContiguous(t *testing.T) {
	for v := int64(0); v < 1<<20; v++ {
		i := histBucket(v)
		if lo, hi := histLow(i), histLow(i+1); v < lo || v >= hi {
			t.Fatalf("value %d in bucket %d of [%d, %d)", v, i, lo, hi)
		}
	}
	for _, v := range []int64{1 << 40, 1<<62 + 12345, 1<<63 - 1} {
		i := histBucket(v)
		if i >= len(histogram{}.counts) || histLow(i) > v {
			t.Fatalf("value %d in bucket %d starting at %d", v, i, histLow(i))
		}
	}
}

func TestHistogramEmptyAndSmall(t *testing.T) {
	h := newHistogram()
	if s := h.summary("x"); s.Samples != 0 || s.P99 != 0 {
		t.Fatalf("empty summary %+v", s)
	}
	h.record(3 * time.Millisecond)
	s := h.summary("x")
	if s.Samples != 1 || s.Max != 3 || s.P50 > 3 || s.P50 < 3*(1-1.0/64) || s.P99 != s.P50 {
		t.Fatalf("one 3 ms sample summarized as %+v", s)
	}
}

func TestBenchRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "produce", "--acks", "2"},
		{"bench", "produce", "--record-size", "-1"},
		{"bench", "produce", "--producers", "0"},
		{"bench", "produce", "--compression", "brotli"},
		{"bench", "produce", "-o", "yaml"},
		{"bench", "produce", "--duration", "0"},
		{"bench", "e2e", "--record-size", "4"},
		{"bench", "baseline", "--copy-bytes", "10"},
		{"bench", "baseline", "--only", "everything", "--duration", "10ms"},
	} {
		// No node answers here: a flag error must come before any dial.
		args = append(args, "--brokers", "127.0.0.1:1", "--timeout", "200ms")
		_, _, err := runCLI(t, "", args...)
		if err == nil || strings.Contains(err.Error(), "no Spool node answered") || strings.Contains(err.Error(), "connection refused") {
			t.Errorf("spool %s: got %v, want a flag error", strings.Join(args, " "), err)
		}
	}
}

func TestBenchReportText(t *testing.T) {
	h := newHistogram()
	h.record(2 * time.Millisecond)
	rep := benchReport{Command: "produce", Settings: map[string]any{"acks": "1"}, Results: []benchResult{
		func() benchResult {
			r := newResult("produce", 1000, 1000*1024, 2*time.Second)
			l := h.summary("produce to ack")
			r.Latency = &l
			return r
		}(),
	}}
	var b strings.Builder
	if err := rep.print(&b, "text"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"spool bench produce (acks=1)", "500 records/s", "0.51 MB/s", "p99 2.000 ms"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}
