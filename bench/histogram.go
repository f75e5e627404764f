package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram is a lock-free log-linear latency histogram: values are bucketed
// by their power of two and then by the histSubBits bits below the leading
// one, so every bucket is within 1/2^histSubBits (~1.6%) of its values.
// Recording is one atomic add; it holds no samples, so a run of hours
// costs what a run of seconds does.
type histogram struct {
	counts [64 << histSubBits]atomic.Int64
	total  atomic.Int64
	sum    atomic.Int64
	max    atomic.Int64
}

const histSubBits = 6

func newHistogram() *histogram { return &histogram{} }

func histBucket(v int64) int {
	if v < 1<<histSubBits {
		if v < 0 {
			v = 0
		}
		return int(v)
	}
	exp := bits.Len64(uint64(v)) - 1 - histSubBits // >= 0
	sub := int(v>>uint(exp)) & (1<<histSubBits - 1)
	return (exp+1)<<histSubBits | sub
}

// histLow is the smallest value in bucket i.
func histLow(i int) int64 {
	if i < 1<<histSubBits {
		return int64(i)
	}
	exp := i>>histSubBits - 1
	sub := int64(i & (1<<histSubBits - 1))
	return (1<<histSubBits | sub) << uint(exp)
}

// record adds one sample.
func (h *histogram) record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[histBucket(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
}

// quantile returns the value at quantile q (0..1): the midpoint of the
// bucket holding it, capped at the largest sample seen.
func (h *histogram) quantile(q float64) time.Duration {
	total := h.total.Load()
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo := histLow(i)
			hi := histLow(i + 1)
			v := lo + (hi-lo)/2
			if hi-lo <= 1 {
				v = lo
			}
			if m := h.max.Load(); v > m {
				v = m
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max.Load())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (h *histogram) summary(what string) Latency {
	n := h.total.Load()
	s := Latency{What: what, Samples: n}
	if n == 0 {
		return s
	}
	s.P50 = ms(h.quantile(0.50))
	s.P99 = ms(h.quantile(0.99))
	s.P999 = ms(h.quantile(0.999))
	s.Max = ms(time.Duration(h.max.Load()))
	s.Mean = ms(time.Duration(h.sum.Load() / n))
	return s
}
