package integration

// Benchmarks for issue 6: real `spool node` processes driven by the
// `spool bench` command (a separate process, so a node's CPU is its own),
// every figure reported with b.ReportMetric beside the machine baseline
// measured the same way. One benchmark op is one record. No figure is
// asserted: the test command (README, .ci/run) runs each once with
// -benchtime 1x, to see they keep working, and scripts/bench-compare.sh
// runs them for real and computes the ratios.
//
//	go test ./integration -run '^$' -bench . -benchtime 20000x
//
// TestBenchCommandEndToEnd (a plain test, so `go test ./...` runs it)
// drives every bench subcommand against a real node in a few seconds.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/bench"
	"github.com/spool-log/spool/internal/retry"
)

var (
	benchPartitions = flag.Int("bench.partitions", 10000, "partitions BenchmarkIdlePartitions creates")
	benchProducers  = flag.Int("bench.producers", 4, "producers of the throughput benchmarks")
	benchFetchFill  = flag.Int("bench.fetchfill", 200000, "most 1 KiB records BenchmarkFetchSendfileVsCopy writes; it reads them again until it has read b.N")
)

// runBench runs `spool bench args... -o json -q` and decodes its report,
// which is package bench's.
func runBench(t testing.TB, args ...string) bench.Report {
	t.Helper()
	args = append(append([]string{"bench"}, args...), "-o", "json", "-q")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, spoolBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spool %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("spool %s: no JSON report: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, r := range rep.Results {
		if r.Errors > 0 {
			t.Fatalf("spool %s: %d errors in %s\n%s", strings.Join(args, " "), r.Errors, r.Name, stderr.String())
		}
	}
	return rep
}

// report puts one result's figures on b, prefixed with its name.
func report(b *testing.B, rep bench.Report, prefix string) {
	for _, r := range rep.Results {
		p := prefix
		if p == "" {
			p = r.Name
		}
		b.ReportMetric(r.RecordsPerSec, p+"_rec/s")
		b.ReportMetric(r.MBPerSec, p+"_MB/s")
		if l := r.Latency; l != nil && l.Samples > 0 {
			b.ReportMetric(l.P50, p+"_p50_ms")
			b.ReportMetric(l.P99, p+"_p99_ms")
			b.ReportMetric(l.P999, p+"_p99.9_ms")
		}
		if v, ok := r.Extra["cpu_seconds_per_gb"]; ok {
			b.ReportMetric(v, p+"_cpu_s/GB")
		}
	}
}

// benchNode is a node as the benchmarks run it: page-cache durability (as
// Kafka's default, and kfake's), quiet logs.
func benchNode(t testing.TB) *Node {
	return StartNode(t, WithArgs("--flush-policy", "os", "--log-level", "warn", "--enable-pprof")) // processMemory reads pprof
}

func count(b *testing.B) string { return strconv.Itoa(max(b.N, 1)) }

// BenchmarkBaseline is the machine's limits: append, copy and round trip.
func BenchmarkBaseline(b *testing.B) {
	rep := runBench(b, "baseline", "--duration", "3s", "--producers", strconv.Itoa(*benchProducers),
		"--record-size", "1024", "--batch-records", "16", "--dir", b.TempDir())
	report(b, rep, "")
}

// BenchmarkProduce1KiB is 1 KiB records, acks=1, several producers.
func BenchmarkProduce1KiB(b *testing.B) {
	n := benchNode(b)
	b.ResetTimer()
	rep := runBench(b, "produce", "--brokers", n.KafkaAddr, "--topic", "p1k", "--partitions", strconv.Itoa(*benchProducers),
		"--producers", strconv.Itoa(*benchProducers), "--record-size", "1024", "--acks", "1",
		"--count", count(b), "--duration", "0")
	b.StopTimer()
	report(b, rep, "")
}

// BenchmarkProduce100B runs the same small-record load against Spool and
// against franz-go's kfake broker keeping its log on disk.
func BenchmarkProduce100B(b *testing.B) {
	load := func(b *testing.B, addr string) []string {
		return []string{"produce", "--brokers", addr, "--topic", "p100", "--partitions", strconv.Itoa(*benchProducers),
			"--producers", strconv.Itoa(*benchProducers), "--record-size", "100", "--acks", "1",
			"--count", count(b), "--duration", "0"}
	}
	b.Run("spool", func(b *testing.B) {
		n := benchNode(b)
		b.ResetTimer()
		rep := runBench(b, load(b, n.KafkaAddr)...)
		b.StopTimer()
		report(b, rep, "")
	})
	b.Run("kfake", func(b *testing.B) {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.TempDir()), kfake.AllowAutoTopicCreation())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ResetTimer()
		rep := runBench(b, load(b, c.ListenAddrs()[0])...)
		b.StopTimer()
		report(b, rep, "")
	})
}

// BenchmarkConsume1KiB reads 1 KiB records back from the page cache.
func BenchmarkConsume1KiB(b *testing.B) {
	n := benchNode(b)
	runBench(b, "produce", "--brokers", n.KafkaAddr, "--topic", "c1k", "--record-size", "1024", "--count", count(b), "--duration", "0")
	b.ResetTimer()
	rep := runBench(b, "consume", "--brokers", n.KafkaAddr, "--topic", "c1k", "--count", count(b))
	b.StopTimer()
	report(b, rep, "")
}

// BenchmarkProduceLatency is acks=1 with one record, hence one request, in
// flight; compare its p99 with BenchmarkBaseline's rtt_p99_ms.
func BenchmarkProduceLatency(b *testing.B) {
	n := benchNode(b)
	b.ResetTimer()
	rep := runBench(b, "produce", "--brokers", n.KafkaAddr, "--topic", "lat", "--record-size", "1024",
		"--acks", "1", "--buffered", "1", "--count", count(b), "--duration", "0")
	b.StopTimer()
	report(b, rep, "")
}

// BenchmarkE2E is produce and consume at once.
func BenchmarkE2E(b *testing.B) {
	n := benchNode(b)
	b.ResetTimer()
	rep := runBench(b, "e2e", "--brokers", n.KafkaAddr, "--topic", "e2e", "--record-size", "1024", "--count", count(b), "--duration", "0")
	b.StopTimer()
	report(b, rep, "")
}

// BenchmarkFetchSendfileVsCopy serves the same reads from two real nodes,
// one run with sendfile(2) and one with `--sendfile=false` (the user-space
// copy), and reports each node process's CPU per GB sent and the
// throughput. One op is one record read. The topic holds at most
// -bench.fetchfill records (written with franz-go before the timer starts),
// read from its start in as many passes as b.N needs by one `spool bench
// consume --raw --count b.N` process: hand-built Fetch requests whose record batches are
// skipped by their headers, so the reader's CPU leaves both cores to the
// node as far as it can. The node's counters must show that the path under
// test is the one that ran.
func BenchmarkFetchSendfileVsCopy(b *testing.B) {
	for _, sendfile := range []bool{true, false} {
		name := map[bool]string{true: "sendfile", false: "copy"}[sendfile]
		b.Run(name, func(b *testing.B) {
			n := StartNode(b, WithArgs("--flush-policy", "os", "--log-level", "warn", "--sendfile="+strconv.FormatBool(sendfile)))
			want := int64(max(b.N, 1))
			fill := min(want, int64(*benchFetchFill))
			runBench(b, "produce", "--brokers", n.KafkaAddr, "--topic", "sf", "--record-size", "1024",
				"--count", strconv.FormatInt(fill, 10), "--duration", "0")
			sfBefore, cpBefore := fetchCounters(b, n)
			before := processCPU(b, n)
			b.ResetTimer()
			rep := runBench(b, "consume", "--raw", "--brokers", n.KafkaAddr, "--topic", "sf",
				"--count", strconv.FormatInt(want, 10))
			b.StopTimer()
			r := rep.Results[0]
			if r.Records < want {
				b.Fatalf("read %d of %d records: %+v", r.Records, want, r)
			}
			records, bytes, seconds := r.Records, r.Bytes, r.Seconds
			cpu := processCPU(b, n) - before
			b.ReportMetric(float64(records)/seconds, "consume_rec/s")
			b.ReportMetric(float64(bytes)/seconds/1e6, "consume_MB/s")
			b.ReportMetric(cpu.Seconds()/(float64(bytes)/1e9), "server_cpu_s/GB")
			sf, cp := fetchCounters(b, n)
			sent := map[bool]int64{true: sf - sfBefore, false: cp - cpBefore}
			if sent[sendfile] < bytes || sent[!sendfile] != 0 {
				b.Fatalf("%s node sent %d bytes by sendfile and %d by copy for %d bytes of record batches read",
					name, sf-sfBefore, cp-cpBefore, bytes)
			}
		})
	}
}

// TestSendfileSwitch: `spool node --sendfile=false` serves Fetch records by
// the user-space copy, and only by it.
func TestSendfileSwitch(t *testing.T) {
	n := StartNode(t, WithArgs("--sendfile=false", "--log-level", "warn"))
	runBench(t, "produce", "--brokers", n.KafkaAddr, "--topic", "nosf", "--record-size", "1024",
		"--count", "2000", "--duration", "0")
	rep := runBench(t, "consume", "--brokers", n.KafkaAddr, "--topic", "nosf")
	if r := rep.Results[0]; r.Records != 2000 {
		t.Fatalf("consumed %+v, want 2000 records", r)
	}
	sf, cp := fetchCounters(t, n)
	if sf != 0 || cp < 2000*1024 {
		t.Fatalf("sendfile_bytes %d and copy_bytes %d, want 0 and at least %d", sf, cp, 2000*1024)
	}
}

// processCPU is the CPU time (user and system) a node process has used so
// far.
func processCPU(t testing.TB, n *Node) time.Duration {
	t.Helper()
	n.mu.Lock()
	pid := n.cmd.Process.Pid
	n.mu.Unlock()
	cpu, err := bench.ProcessCPUTime(pid)
	if err != nil {
		t.Fatalf("node cpu: %v", err)
	}
	return cpu
}

// BenchmarkIdlePartitions creates -bench.partitions partitions (10,000 by
// default) with kadm on one node and reports what each costs idle (resident
// memory and Go heap in use, after a GC) and how long a restart takes until
// the node serves a produce to the last partition.
func BenchmarkIdlePartitions(b *testing.B) {
	parts := int32(*benchPartitions)
	n := benchNode(b)
	base := processMemory(b, n)
	b.ResetTimer()
	cl := franzClient(b, n.KafkaAddr, kgo.RequestTimeoutOverhead(5*time.Minute))
	adm := kadm.NewClient(cl)
	start := time.Now()
	const perTopic = 1000 // several topics, as a real cluster has
	topics := 0
	for made := int32(0); made < parts; made += perTopic {
		np := min(perTopic, parts-made)
		resp, err := adm.CreateTopic(ctxTimeout(b, 10*time.Minute), np, 1, nil, fmt.Sprintf("idle-%d", topics))
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			b.Fatalf("create topic idle-%d with %d partitions: %v", topics, np, err)
		}
		topics++
	}
	created := time.Since(start)
	retry.Run(b, 5*time.Minute, func() error {
		if got := int32(n.Stats(b)["partitions"].(float64)); got < parts {
			return fmt.Errorf("node has %d of %d partitions", got, parts)
		}
		return nil
	})
	b.StopTimer()
	after := processMemory(b, n)
	b.ReportMetric(created.Seconds(), "create_s")
	b.ReportMetric(float64(after.rss-base.rss)/float64(parts), "rss_B/partition")
	b.ReportMetric(float64(after.heapInuse-base.heapInuse)/float64(parts), "heap_B/partition")
	b.ReportMetric(float64(after.fds-base.fds)/float64(parts), "fds/partition")

	b.Logf("%d partitions: created in %v; rss %d -> %d bytes, heap in use %d -> %d bytes, fds %d -> %d",
		parts, created, base.rss, after.rss, base.heapInuse, after.heapInuse, base.fds, after.fds)

	// Restart: from SIGTERM to exit, then from start to /readyz and to a
	// produce acknowledged by the last partition of the last topic. The
	// harness's Stop gives up after 20 s; many partitions may need longer,
	// and how long is one of the figures.
	stopped := time.Now()
	n.signal(syscall.SIGTERM, 10*time.Minute)
	shutdown := time.Since(stopped)
	b.ReportMetric(shutdown.Seconds(), "shutdown_s")
	restart := time.Now()
	n.StartNoWait()
	n.WaitReady(10 * time.Minute)
	ready := time.Since(restart)
	b.ReportMetric(ready.Seconds(), "restart_to_ready_s")
	last := fmt.Sprintf("idle-%d", topics-1)
	lastPart := (parts - 1) % perTopic
	pcl := franzClient(b, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	if err := pcl.ProduceSync(ctxTimeout(b, 5*time.Minute), &kgo.Record{Topic: last, Partition: lastPart, Value: []byte("x")}).FirstErr(); err != nil {
		b.Fatalf("produce to %s/%d after restart: %v", last, lastPart, err)
	}
	serving := time.Since(restart)
	reopened := processMemory(b, n)
	b.ReportMetric(serving.Seconds(), "restart_to_serving_s")
	b.ReportMetric(float64(reopened.rss-base.rss)/float64(parts), "restarted_rss_B/partition")
	b.ReportMetric(float64(reopened.heapInuse-base.heapInuse)/float64(parts), "restarted_heap_B/partition")
	b.Logf("shutdown %v; restart: ready after %v, serving after %v; rss %d, heap in use %d bytes, fds %d",
		shutdown, ready, serving, reopened.rss, reopened.heapInuse, reopened.fds)
	stopped = time.Now()
	n.signal(syscall.SIGTERM, 10*time.Minute)
	b.ReportMetric(time.Since(stopped).Seconds(), "final_shutdown_s")
}

// memory is what a node process holds.
type memory struct {
	rss       int64 // VmRSS
	heapInuse int64 // Go HeapInuse after a forced GC
	fds       int64
}

// processMemory forces a GC in the node (pprof's heap?gc=1) and reads its
// heap from the profile's MemStats and its RSS and open files from /proc.
func processMemory(t testing.TB, n *Node) memory {
	t.Helper()
	var m memory
	resp, err := http.Get("http://" + n.AdminAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			m.heapInuse, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	resp.Body.Close()
	if m.heapInuse == 0 {
		t.Fatalf("heap profile has no HeapInuse line")
	}
	n.mu.Lock()
	pid := n.cmd.Process.Pid
	n.mu.Unlock()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("node status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			m.rss = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("node fds: %v", err)
	}
	m.fds = int64(len(fds))
	return m
}

// TestBenchCommandEndToEnd runs every `spool bench` subcommand briefly
// against a real node, so CI covers the command and the benchmarks' plumbing.
func TestBenchCommandEndToEnd(t *testing.T) {
	n := benchNode(t)
	rep := runBench(t, "produce", "--brokers", n.KafkaAddr, "--topic", "cli", "--partitions", "2",
		"--producers", "2", "--record-size", "1024", "--count", "3000", "--duration", "0")
	if r := rep.Results[0]; r.Records != 3000 || r.Bytes != 3000*1024 || r.Latency == nil || r.Latency.Samples != 3000 {
		t.Fatalf("produce: %+v", r)
	}
	rep = runBench(t, "consume", "--brokers", n.KafkaAddr, "--topic", "cli")
	if r := rep.Results[0]; r.Records != 3000 || r.Bytes != 3000*1024 {
		t.Fatalf("consume of 3000 records: %+v", r)
	}
	rep = runBench(t, "e2e", "--brokers", n.KafkaAddr, "--topic", "cli", "--record-size", "100", "--count", "1000", "--duration", "0")
	if r := rep.Results[0]; r.Records != 1000 || r.Latency == nil || r.Latency.Samples != 1000 {
		t.Fatalf("e2e: %+v", r)
	}
	rep = runBench(t, "baseline", "--duration", "100ms", "--copy-bytes", "2097152", "--dir", t.TempDir())
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Name)
	}
	if want := []string{"append", "append-rtt", "copy", "rtt", "replicated", "replicated-rtt"}; !slices.Equal(names, want) {
		t.Fatalf("baseline measured %v, want %v: %+v", names, want, rep.Results)
	}
	for _, r := range rep.Results {
		if r.Bytes <= 0 {
			t.Fatalf("baseline %s measured nothing: %+v", r.Name, r)
		}
	}
	// The node's counters agree with the bench: 3000 + 1000 records in.
	if got := n.Stats(t)["records_in"].(float64); got != 4000 {
		t.Fatalf("node counted %v records in, want 4000", got)
	}
}
