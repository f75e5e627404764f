package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sampleReport() Report {
	h := newHistogram()
	h.record(2 * time.Millisecond)
	r := newResult("produce", 1000, 1000*1024, 2*time.Second)
	l := h.summary("produce to ack")
	r.Latency = &l
	r.Extra = map[string]float64{"batches": 10}
	return Report{Command: "produce", Settings: map[string]any{"acks": "1", "topic": "t"}, Results: []Result{r}}
}

func TestReportText(t *testing.T) {
	rep := sampleReport()
	var b strings.Builder
	if err := rep.Print(&b, "text"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"spool bench produce (acks=1 topic=t)", "500 records/s", "0.51 MB/s", "p99 2.000 ms", "batches=10"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

// The JSON a report prints decodes back into the same Report, as scripts
// and integration's benchmarks read it.
func TestReportJSONRoundTrips(t *testing.T) {
	rep := sampleReport()
	var b strings.Builder
	if err := rep.Print(&b, "json"); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"records_per_sec": 500`, `"p99_ms": 2`, `"p99_9_ms"`} {
		if !strings.Contains(b.String(), field) {
			t.Errorf("JSON report lacks %s:\n%s", field, b.String())
		}
	}
	var back Report
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	res, ok := back.Result("produce")
	if !ok || res.Records != 1000 || res.Latency == nil || res.Latency.P99 != rep.Results[0].Latency.P99 || res.Extra["batches"] != 10 {
		t.Fatalf("decoded %+v from %s", back, b.String())
	}
	if err := rep.Print(&b, "yaml"); err == nil {
		t.Fatal("format yaml printed")
	}
}
