package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spool-log/spool/bench"
)

// runBenchJSON runs a bench command with -o json and decodes its report.
func runBenchJSON(t *testing.T, args ...string) bench.Report {
	t.Helper()
	out, errOut, err := runCLI(t, "", append(args, "-o", "json", "-q")...)
	if err != nil {
		t.Fatalf("spool %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("spool %s printed no JSON report: %v\n%s", strings.Join(args, " "), err, out)
	}
	return rep
}

func resultNamed(t *testing.T, rep bench.Report, name string) bench.Result {
	t.Helper()
	r, ok := rep.Result(name)
	if !ok {
		t.Fatalf("report of %s has no %q result: %+v", rep.Command, name, rep.Results)
	}
	return r
}

func TestBenchRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "produce", "--acks", "2"},
		{"bench", "produce", "--record-size", "-1"},
		{"bench", "produce", "--producers", "0"},
		{"bench", "produce", "--compression", "brotli"},
		{"bench", "produce", "-o", "yaml"},
		{"bench", "produce", "--duration", "0"},
		{"bench", "consume", "-o", "yaml"},
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

// The commands hand their flags to the bench and print its report as text
// by default; the load itself is package bench's to test.
func TestBenchCommandsPrintTheirReport(t *testing.T) {
	n := testNode(t)
	out, _, err := runCLI(t, "", "bench", "produce", "--brokers", n.KafkaAddr(), "--topic", "cli", "--partitions", "2",
		"--record-size", "100", "--count", "300", "--acks", "all", "-q")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spool bench produce (", "acks=all", "partitions=2", "record_size=100", "(300 records, 30000 bytes, 0 errors", "latency (produce to ack)"} {
		if !strings.Contains(out, want) {
			t.Errorf("produce printed no %q:\n%s", want, out)
		}
	}
	rep := runBenchJSON(t, "bench", "produce", "--raw", "--brokers", n.KafkaAddr(), "--topic", "cli",
		"--record-size", "100", "--batch-records", "10", "--count", "100")
	if res := resultNamed(t, rep, "produce"); res.Records != 100 || res.Extra["records_per_batch"] != 10 || rep.Settings["raw"] != true {
		t.Fatalf("raw produce: %+v %v", res, rep.Settings)
	}
	rep = runBenchJSON(t, "bench", "consume", "--brokers", n.KafkaAddr(), "--topic", "cli", "--max-wait", "20ms")
	if res := resultNamed(t, rep, "consume"); res.Records != 400 || rep.Settings["max_wait"] != "20ms" {
		t.Fatalf("consume of the 400 records: %+v %v", res, rep.Settings)
	}
	rep = runBenchJSON(t, "bench", "consume", "--raw", "--brokers", n.KafkaAddr(), "--topic", "filled", "--fill", "50")
	if res := resultNamed(t, rep, "consume"); res.Records != 50 {
		t.Fatalf("consume --fill 50: %+v", res)
	}
	rep = runBenchJSON(t, "bench", "e2e", "--brokers", n.KafkaAddr(), "--topic", "cli", "--record-size", "64", "--count", "200")
	if res := resultNamed(t, rep, "e2e"); res.Records != 200 || rep.Settings["max_wait"] != "10ms" {
		t.Fatalf("e2e: %+v %v", res, rep.Settings)
	}
}
