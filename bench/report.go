package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Report is what a bench run measured: its settings and one result per
// thing measured (the baseline measures up to four).
type Report struct {
	Command  string         `json:"command"`
	Settings map[string]any `json:"settings"`
	Results  []Result       `json:"results"`
}

// Result is one measured figure.
type Result struct {
	Name          string   `json:"name"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Errors        int64    `json:"errors"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"records_per_sec"`
	MBPerSec      float64  `json:"mb_per_sec"`
	Latency       *Latency `json:"latency,omitempty"`
	// Extra holds figures particular to one measurement (batch sizes seen,
	// CPU seconds, ...).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Latency describes one latency histogram, in milliseconds.
type Latency struct {
	What    string  `json:"what"`
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	P999    float64 `json:"p99_9_ms"`
	Max     float64 `json:"max_ms"`
	Mean    float64 `json:"mean_ms"`
}

// Result returns the result called name.
func (r *Report) Result(name string) (Result, bool) {
	for _, res := range r.Results {
		if res.Name == name {
			return res, true
		}
	}
	return Result{}, false
}

func newResult(name string, records, bytes int64, elapsed time.Duration) Result {
	r := Result{Name: name, Records: records, Bytes: bytes, Seconds: elapsed.Seconds()}
	if s := elapsed.Seconds(); s > 0 {
		r.RecordsPerSec = float64(records) / s
		r.MBPerSec = float64(bytes) / s / 1e6
	}
	return r
}

// Print writes the report in format: "text", a few lines for people, or
// "json", one indented document for scripts.
func (r *Report) Print(w io.Writer, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "text":
	default:
		return fmt.Errorf("output %q: want text or json", format)
	}
	fmt.Fprintf(w, "spool bench %s (%s)\n", r.Command, sortedPairs(r.Settings, "%v"))
	for _, res := range r.Results {
		fmt.Fprintf(w, "  %-10s %12.0f records/s %10.2f MB/s  (%d records, %d bytes, %d errors, %.2fs)\n",
			res.Name, res.RecordsPerSec, res.MBPerSec, res.Records, res.Bytes, res.Errors, res.Seconds)
		if l := res.Latency; l != nil && l.Samples > 0 {
			fmt.Fprintf(w, "  %-10s latency (%s): p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms  max %.3f ms  (%d samples)\n",
				"", l.What, l.P50, l.P99, l.P999, l.Max, l.Samples)
		}
		if len(res.Extra) > 0 {
			fmt.Fprintf(w, "  %-10s %s\n", "", sortedPairs(res.Extra, "%.4g"))
		}
	}
	return nil
}

// sortedPairs is m as "k=v" pairs in key order, each value in verb.
func sortedPairs[V any](m map[string]V, verb string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s="+verb, k, m[k]))
	}
	return strings.Join(parts, " ")
}
