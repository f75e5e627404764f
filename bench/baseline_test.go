package bench

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The baseline's servers run in a process of their own. Under test that is
// this test binary running TestBaselineServerProcess, which serves only when
// the environment says it is such a process.
func testServerCommand(args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestBaselineServerProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "SPOOL_TEST_BASELINE_SERVER=1")
	return cmd, nil
}

func TestBaselineServerProcess(t *testing.T) {
	if os.Getenv("SPOOL_TEST_BASELINE_SERVER") != "1" {
		t.Skip("the server process the baseline tests start; not a test of its own")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if err := ServeMain(args, os.Stdin, os.Stdout); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// testBaseline is a baseline of short runs whose servers are test processes.
func testBaseline(t *testing.T, d time.Duration) BaselineConfig {
	cfg := DefaultBaseline()
	cfg.Dir, cfg.ServerCommand = t.TempDir(), testServerCommand
	cfg.Run.Duration = d
	return cfg
}

// resultNamed is rep's result called name.
func resultNamed(t *testing.T, rep Report, name string) Result {
	t.Helper()
	r, ok := rep.Result(name)
	if !ok {
		t.Fatalf("report of %s has no %q result: %+v", rep.Command, name, rep.Results)
	}
	return r
}

func TestBaselineMeasuresAllFour(t *testing.T) {
	cfg := testBaseline(t, 200*time.Millisecond)
	cfg.CopyBytes, cfg.RecordSize, cfg.BatchRecords, cfg.Producers = 4<<20, 100, 10, 2
	cfg.Only = []string{"append", "append-rtt", "copy", "rtt"} // replicated's own test: TestBaselineReplicated
	rep, err := Baseline(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := cfg.Dir
	if len(rep.Results) != 4 {
		t.Fatalf("baseline results %+v, want append, append-rtt, copy, rtt", rep.Results)
	}
	app := resultNamed(t, rep, "append")
	if app.Records <= 0 || app.Bytes != app.Records*100 || app.Latency == nil || app.Latency.Samples != app.Records/10 {
		t.Fatalf("append %+v: want whole batches of 10 records of 100 bytes, one round trip each", app)
	}
	if _, ok := app.Extra["server_cpu_seconds_per_gb"]; !ok || app.Extra["records_per_batch"] != 10 {
		t.Fatalf("append extra %v: want the server's CPU per GB and 10 records per batch", app.Extra)
	}
	art := resultNamed(t, rep, "append-rtt")
	if art.Records <= 0 || art.Bytes != art.Records*100 || art.Latency == nil || art.Latency.Samples != art.Records ||
		art.Extra["records_per_batch"] != 1 {
		t.Fatalf("append-rtt %+v: want one record of 100 bytes per round trip", art)
	}
	cp := resultNamed(t, rep, "copy")
	if cp.Bytes <= 4194304 || cp.Records != cp.Bytes/100 {
		t.Fatalf("copy %+v: want more than one pass over the 4 MiB file", cp)
	}
	if _, ok := cp.Extra["cpu_seconds_per_gb"]; !ok {
		t.Fatalf("copy extra %v: want the sender's CPU per GB", cp.Extra)
	}
	if _, ok := cp.Extra["client_cpu_seconds_per_gb"]; !ok {
		t.Fatalf("copy extra %v: want the reader's CPU per GB", cp.Extra)
	}
	rtt := resultNamed(t, rep, "rtt")
	if rtt.Latency == nil || rtt.Latency.Samples != rtt.Records || rtt.Latency.P99 <= 0 || rtt.Latency.What != "round trip" {
		t.Fatalf("rtt %+v", rtt)
	}
	// The files it and its servers wrote are gone.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("baseline left %v in its dir (%v)", ents, err)
	}
}

func TestBaselineOnly(t *testing.T) {
	cfg := testBaseline(t, 100*time.Millisecond)
	cfg.Only = []string{"rtt", "append-rtt"}
	rep, err := Baseline(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Name != "rtt" || rep.Results[1].Name != "append-rtt" {
		t.Fatalf("only rtt, append-rtt gave %+v", rep.Results)
	}
	cfg.Only = []string{"append", "nope"}
	if _, err := Baseline(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "append-rtt") {
		t.Fatalf("only append, nope: err %v, want the list of known measurements", err)
	}
}

// Bad settings are refused before any server starts.
func TestBaselineRejectsBadSettings(t *testing.T) {
	for name, change := range map[string]func(*BaselineConfig){
		"copy-bytes":    func(c *BaselineConfig) { c.CopyBytes = 10 },
		"record-size":   func(c *BaselineConfig) { c.RecordSize = 0 },
		"producers":     func(c *BaselineConfig) { c.Producers = maxProducers + 1 },
		"roll-bytes":    func(c *BaselineConfig) { c.RollBytes = 1 },
		"duration":      func(c *BaselineConfig) { c.Run.Duration, c.Run.Count = 0, 10 },
		"batch-records": func(c *BaselineConfig) { c.BatchRecords = 0 },
	} {
		cfg := testBaseline(t, time.Second)
		cfg.ServerCommand = func(...string) (*exec.Cmd, error) { return nil, errors.New("a server was started") }
		change(&cfg)
		if _, err := Baseline(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--"+name) {
			t.Errorf("%s: %v, want an error naming --%s", name, err, name)
		}
	}
}

// A server is another process; it serves until its stdin closes and is
// gone once stopped.
func TestBaselineServerIsAProcess(t *testing.T) {
	batch := rawRecordBatch(1, []byte("ping"), 0)
	srv, err := startTestServer(t, "rtt", "--batch-bytes", strconv.Itoa(len(batch)))
	if err != nil {
		t.Fatal(err)
	}
	pid := srv.cmd.Process.Pid
	if pid == os.Getpid() {
		t.Fatalf("server pid %d is this process", pid)
	}
	m := newMeter("rtt")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := driveBaseline(ctx, srv.addr, batch, m); err != nil {
		t.Fatal(err)
	}
	if m.records.Load() == 0 {
		t.Fatal("no round trip to the server process")
	}
	if _, err := srv.cpu(); err != nil {
		t.Fatal(err)
	}
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("server pid %d still there after stop (kill 0: %v)", pid, err)
	}
}

// What goes wrong in the server process comes back with its stderr.
func TestBaselineServerErrorsReachTheBaseline(t *testing.T) {
	if _, err := startTestServer(t, "nope"); err == nil || !strings.Contains(err.Error(), `--mode "nope"`) {
		t.Fatalf("server of mode nope: %v, want its complaint about --mode", err)
	}
	if _, err := startTestServer(t, "append", "--dir", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--batch-bytes") {
		t.Fatalf("append server without --batch-bytes: %v, want its complaint about --batch-bytes", err)
	}
	dir := t.TempDir()
	batch := rawRecordBatch(1, make([]byte, 64<<10), 0)
	srv, err := startTestServer(t, "append", "--dir", dir, "--roll-bytes", "1048576", "--batch-bytes", strconv.Itoa(len(batch)))
	if err != nil {
		t.Fatal(err)
	}
	// The server's first file is open; the next, past 1 MiB, cannot be made.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	derr := driveBaseline(ctx, srv.addr, batch, newMeter("append"))
	serr := srv.stop()
	if derr == nil || serr == nil || !strings.Contains(serr.Error(), "no such file or directory") {
		t.Fatalf("appending past a roll into a deleted dir: client %v, server %v; want both to fail, the server saying why", derr, serr)
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

// driveBaseline sends batch to a baseline server on one connection until
// ctx ends.
func driveBaseline(ctx context.Context, addr string, batch []byte, m *meter) error {
	producers, err := dialBaseline(ctx, addr, 1, batch, 1, int64(len(batch)))
	if err != nil {
		return err
	}
	defer producers[0].c.nc.Close()
	return runRawProducers(ctx, producers, 1, 0, m)
}

// The baseline's server takes exactly the record batch of each Produce
// request, flexible (v9) or not (v3), answers each in order, and refuses
// any other request.
func TestBaselineServerTakesTheBatch(t *testing.T) {
	batch := rawRecordBatch(3, []byte("value"), 7)
	var (
		mu   sync.Mutex
		seen [][]byte
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveConns(ln, func(c net.Conn) error {
		return serveProduce(c, len(batch), func(b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, slices.Clone(b))
			return nil
		})
	})
	ctx := context.Background()
	for _, version := range []int16{9, 3} {
		c, err := dialRawKafka(ctx, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.versions[int16(kmsg.Produce)] = version
		p, err := newRawProducer(c, "baseline", 0, 1, batch, 3, 15)
		if err != nil {
			t.Fatal(err)
		}
		if p.req.Version != version {
			t.Fatalf("producer speaks v%d, want v%d", p.req.Version, version)
		}
		m := newMeter("append")
		if err := runRawProducers(ctx, []*rawProducer{p}, 1, 6, m); err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		c.nc.Close()
		if m.records.Load() != 6 || m.latency.summary("").Samples != 2 {
			t.Fatalf("v%d: %d records in %d round trips, want 6 in 2", version, m.records.Load(), m.latency.summary("").Samples)
		}
	}
	mu.Lock()
	if len(seen) != 4 {
		t.Fatalf("server took %d batches, want 4", len(seen))
	}
	for i, b := range seen {
		if !bytes.Equal(b, batch) {
			t.Fatalf("batch %d the server took differs from the one sent", i)
		}
	}
	mu.Unlock()

	// A request it does not answer ends the connection, with the reason.
	c, err := dialRawKafka(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	md := kmsg.NewPtrMetadataRequest()
	if _, err := c.nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, md, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.readFrame(); err == nil {
		t.Fatal("a Metadata request was answered")
	}
	c.nc.Close()
	if err := srv.close(); err == nil || !strings.Contains(err.Error(), "answers only ApiVersions v0 and Produce") {
		t.Fatalf("server error %v, want it to name what it answers", err)
	}
}

// startTestServer starts a baseline server process of mode.
func startTestServer(t *testing.T, mode string, args ...string) (*baselineProcess, error) {
	cfg := testBaseline(t, 0)
	return cfg.startServer(mode, args...)
}
