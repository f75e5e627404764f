package main

// `spool bench` measures a running cluster (produce, consume, e2e) and this
// machine's own limits (baseline), so every figure can be read as a ratio to
// what the hardware does with nothing but write(2), sendfile(2) and a loopback
// round trip. The machines these run on are shared and noisy: an absolute
// figure alone means little, a ratio measured in the same run means more.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchExtraCommands lets build-tagged files (bench_kfake.go) add
// subcommands without touching the default binary.
var benchExtraCommands []func(g *globals) *cobra.Command

func newBenchCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput and latency of a cluster, and this machine's limits",
		Long: `Measure a running cluster with franz-go (produce, consume, e2e) and this
machine's own limits (baseline). Each prints a live progress line on stderr
once a second and a summary with records/s, MB/s and latency percentiles;
-o json prints the summary as JSON on stdout for scripts.

Read the figures as ratios: run 'spool bench baseline' in the same session
and divide (scripts/bench-compare.sh does the whole comparison).`,
	}
	cmd.AddCommand(newBenchProduceCmd(g), newBenchConsumeCmd(g), newBenchE2ECmd(g), newBenchBaselineCmd())
	for _, extra := range benchExtraCommands {
		cmd.AddCommand(extra(g))
	}
	return cmd
}

// benchCommon are the flags every bench subcommand shares.
type benchCommon struct {
	duration time.Duration
	count    int64
	output   string
	quiet    bool
}

func (c *benchCommon) register(fs *pflag.FlagSet, defaultDuration time.Duration) {
	fs.DurationVar(&c.duration, "duration", defaultDuration, "how long to run (with --count, whichever ends first; 0 means no limit)")
	fs.Int64Var(&c.count, "count", 0, "stop after this many records (0: run for --duration)")
	fs.StringVarP(&c.output, "output", "o", "text", "summary format: text or json")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no progress line on stderr")
}

func (c *benchCommon) validate() error {
	if c.output != "text" && c.output != "json" {
		return fmt.Errorf("output %q: want text or json", c.output)
	}
	if c.duration < 0 || c.count < 0 {
		return errors.New("--duration and --count must not be negative")
	}
	if c.duration == 0 && c.count == 0 {
		return errors.New("give --duration or --count (or both)")
	}
	return nil
}

// context bounds a run by --duration.
func (c *benchCommon) context(parent context.Context) (context.Context, context.CancelFunc) {
	if c.duration > 0 {
		return context.WithTimeout(parent, c.duration)
	}
	return context.WithCancel(parent)
}

// benchReport is what a bench command prints: its settings and one result
// per thing measured (baseline measures three).
type benchReport struct {
	Command  string         `json:"command"`
	Settings map[string]any `json:"settings"`
	Results  []benchResult  `json:"results"`
}

// benchResult is one measured figure.
type benchResult struct {
	Name          string          `json:"name"`
	Records       int64           `json:"records"`
	Bytes         int64           `json:"bytes"`
	Errors        int64           `json:"errors"`
	Seconds       float64         `json:"seconds"`
	RecordsPerSec float64         `json:"records_per_sec"`
	MBPerSec      float64         `json:"mb_per_sec"`
	Latency       *latencySummary `json:"latency,omitempty"`
	// Extra holds figures particular to one measurement (batch sizes seen,
	// CPU seconds, ...).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// latencySummary describes one latency histogram, in milliseconds.
type latencySummary struct {
	What    string  `json:"what"`
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	P999    float64 `json:"p99_9_ms"`
	Max     float64 `json:"max_ms"`
	Mean    float64 `json:"mean_ms"`
}

func newResult(name string, records, bytes int64, elapsed time.Duration) benchResult {
	r := benchResult{Name: name, Records: records, Bytes: bytes, Seconds: elapsed.Seconds()}
	if s := elapsed.Seconds(); s > 0 {
		r.RecordsPerSec = float64(records) / s
		r.MBPerSec = float64(bytes) / s / 1e6
	}
	return r
}

// print writes the report as text or JSON.
func (r *benchReport) print(w io.Writer, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	keys := make([]string, 0, len(r.Settings))
	for k := range r.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var settings []string
	for _, k := range keys {
		settings = append(settings, fmt.Sprintf("%s=%v", k, r.Settings[k]))
	}
	fmt.Fprintf(w, "spool bench %s (%s)\n", r.Command, strings.Join(settings, " "))
	for _, res := range r.Results {
		fmt.Fprintf(w, "  %-10s %12.0f records/s %10.2f MB/s  (%d records, %d bytes, %d errors, %.2fs)\n",
			res.Name, res.RecordsPerSec, res.MBPerSec, res.Records, res.Bytes, res.Errors, res.Seconds)
		if l := res.Latency; l != nil && l.Samples > 0 {
			fmt.Fprintf(w, "  %-10s latency (%s): p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms  (%d samples)\n",
				"", l.What, l.P50, l.P99, l.P999, l.Max, l.Samples)
		}
		if len(res.Extra) > 0 {
			ek := make([]string, 0, len(res.Extra))
			for k := range res.Extra {
				ek = append(ek, k)
			}
			sort.Strings(ek)
			var parts []string
			for _, k := range ek {
				parts = append(parts, fmt.Sprintf("%s=%.4g", k, res.Extra[k]))
			}
			fmt.Fprintf(w, "  %-10s %s\n", "", strings.Join(parts, " "))
		}
	}
	return nil
}

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

// progress prints one line a second to w until stop is closed. The returned
// function stops it and waits.
func (m *meter) progress(w io.Writer, quiet bool) (stop func()) {
	if quiet {
		return func() {}
	}
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

func (m *meter) result(elapsed time.Duration, latencyWhat string) benchResult {
	r := newResult(m.name, m.records.Load(), m.bytes.Load(), elapsed)
	r.Errors = m.errors.Load()
	if l := m.latency.summary(latencyWhat); l.Samples > 0 {
		r.Latency = &l
	}
	return r
}

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

func (h *histogram) summary(what string) latencySummary {
	n := h.total.Load()
	s := latencySummary{What: what, Samples: n}
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
