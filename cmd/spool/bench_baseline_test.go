package main

import (
	"os"
	"testing"
)

func TestBenchBaselineMeasuresAllThree(t *testing.T) {
	dir := t.TempDir()
	rep := runBenchJSON(t, "bench", "baseline", "--duration", "200ms", "--dir", dir,
		"--copy-bytes", "4194304", "--record-size", "100", "--batch-records", "10", "--producers", "2")
	if len(rep.Results) != 3 {
		t.Fatalf("baseline results %+v, want append, copy, rtt", rep.Results)
	}
	app := resultNamed(t, rep, "append")
	if app.Records <= 0 || app.Bytes != app.Records*100 || app.Latency == nil || app.Latency.Samples != app.Records/10 {
		t.Fatalf("append %+v: want whole batches of 10 records of 100 bytes, one round trip each", app)
	}
	cp := resultNamed(t, rep, "copy")
	if cp.Bytes <= 4194304 || cp.Records != cp.Bytes/100 {
		t.Fatalf("copy %+v: want more than one pass over the 4 MiB file", cp)
	}
	rtt := resultNamed(t, rep, "rtt")
	if rtt.Latency == nil || rtt.Latency.Samples != rtt.Records || rtt.Latency.P99 <= 0 {
		t.Fatalf("rtt %+v", rtt)
	}
	// The files it wrote are gone.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("baseline left %v in its dir (%v)", ents, err)
	}
}

func TestBaselineAppendRolls(t *testing.T) {
	af := &appendFile{dir: t.TempDir(), roll: 1000}
	if err := af.open(); err != nil {
		t.Fatal(err)
	}
	defer af.f.Close()
	batch := make([]byte, 300)
	for i := 0; i < 10; i++ {
		if err := af.append(batch); err != nil {
			t.Fatal(err)
		}
	}
	// 3 batches fit in 1000 bytes: 10 batches take 4 files, the old ones deleted.
	if af.rolls != 3 || af.size != 300 {
		t.Fatalf("after 10 batches: %d rolls, %d bytes in the current file; want 3 and 300", af.rolls, af.size)
	}
	ents, _ := os.ReadDir(af.dir)
	if len(ents) != 1 {
		t.Fatalf("%d files left, want only the current one", len(ents))
	}
}
