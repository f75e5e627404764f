package bench

import (
	"math/rand"
	"sort"
	"testing"
	"time"
)

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
