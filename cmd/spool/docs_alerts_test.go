package main

import (
	"bufio"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// The example alert rules of docs/alerts.yml: promtool accepts them, its
// unit tests (docs/alerts_test.yml) pass, and every series they name is one
// a real `spool node` serves on /metrics.

// TestAlertRules needs promtool (Debian's prometheus package; scripts/test
// installs it) and fails without it.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found: install it (Debian/Ubuntu: apt-get install prometheus; scripts/test does): %v", err)
	}
	docs := filepath.Join(repoRoot, "docs")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = docs
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	exprs := alertExprs(t, filepath.Join(docs, "alerts.yml"))
	scraped := realNodeScrape(t)
	for _, e := range exprs {
		if err := checkAlertExpr(e, scraped); err != nil {
			t.Errorf("docs/alerts.yml: %s\n  %v", e, err)
		}
	}
}

// alertExprs reads the expr of every alert of a rules file (one line each).
func alertExprs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	var exprs []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "- alert:") {
			alerts++
		}
		if e, ok := strings.CutPrefix(l, "expr:"); ok {
			exprs = append(exprs, strings.TrimSpace(e))
		}
	}
	if alerts == 0 || len(exprs) != alerts {
		t.Fatalf("%s: %d alerts, %d one-line exprs", file, alerts, len(exprs))
	}
	return exprs
}

// scrapedSeries is what one /metrics page holds: metric name → the label
// sets of its samples.
type scrapedSeries map[string][]map[string]string

var (
	sampleLine  = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s`)
	labelPair   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	selector    = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	labelClause = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

func parseScrape(text string) scrapedSeries {
	s := scrapedSeries{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[3], -1) {
			labels[p[1]] = p[2]
		}
		s[m[1]] = append(s[m[1]], labels)
	}
	return s
}

// promqlWords are PromQL's keywords, which are not series.
var promqlWords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}

// checkAlertExpr is nil when every series expr names is in scraped, with
// the label values its equality matchers ask for. `up` is Prometheus's own.
func checkAlertExpr(expr string, scraped scrapedSeries) error {
	want := map[string][][2]string{} // name → label=value pairs
	rest := selector.ReplaceAllStringFunc(expr, func(sel string) string {
		m := selector.FindStringSubmatch(sel)
		var pairs [][2]string
		for _, p := range regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(m[2], -1) {
			pairs = append(pairs, [2]string{p[1], p[2]})
		}
		want[m[1]] = append(want[m[1]], pairs...)
		return " "
	})
	rest = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(rest, " ")
	rest = labelClause.ReplaceAllString(rest, " ")
	rest = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(rest, " ")
	for _, loc := range identifier.FindAllStringIndex(rest, -1) {
		w := rest[loc[0]:loc[1]]
		if loc[0] > 0 && (rest[loc[0]-1] >= '0' && rest[loc[0]-1] <= '9' || rest[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		if promqlWords[strings.ToLower(w)] || strings.HasPrefix(strings.TrimLeft(rest[loc[1]:], " "), "(") {
			continue // a keyword or a function
		}
		if _, ok := want[w]; !ok {
			want[w] = nil
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("names no series")
	}
	for name, pairs := range want {
		if name == "up" {
			continue
		}
		samples, ok := scraped[name]
		if !ok {
			return fmt.Errorf("%s is not on a node's /metrics", name)
		}
		for _, p := range pairs {
			found := false
			for _, labels := range samples {
				found = found || labels[p[0]] == p[1]
			}
			if !found {
				return fmt.Errorf("no %s series on a node's /metrics has %s=%q", name, p[0], p[1])
			}
		}
	}
	return nil
}

func TestCheckAlertExpr(t *testing.T) {
	scraped := parseScrape(`# HELP spool_replication_offline_partitions x
spool_replication_offline_partitions 0
spool_membership_members{status="alive"} 1
spool_membership_members{status="failed"} 0
spool_replication_commit_seconds_bucket{replicated="true",le="0.5"} 0
spool_kafka_request_seconds_bucket{api="Produce",le="+Inf"} 0
spool_rebalance_moving_partitions 0
spool_rebalance_moves_completed 0
`)
	for _, c := range []struct {
		expr  string
		wrong string
	}{
		{`up{job="spool"} == 0`, ""},
		{`spool_replication_offline_partitions > 0`, ""},
		{`spool_replication_offline_partition > 0`, "spool_replication_offline_partition is not"},
		{`spool_membership_members{status="failed"} > 0`, ""},
		{`spool_membership_members{status="faild"} > 0`, `status="faild"`},
		{`histogram_quantile(0.99, sum by (instance, le) (rate(spool_replication_commit_seconds_bucket[5m]))) > 0.5`, ""},
		{`histogram_quantile(0.99, sum by (instance, le) (rate(spool_replication_commit_second_bucket[5m]))) > 0.5`, "spool_replication_commit_second_bucket is not"},
		{`histogram_quantile(0.99, sum by (instance, le) (rate(spool_kafka_request_seconds_bucket{api="Produce"}[5m]))) > 1e0`, ""},
		{`spool_rebalance_moving_partitions > 0 and increase(spool_rebalance_moves_completed[1h]) == 0`, ""},
		{`spool_rebalance_moving_partitions > 0 and increase(spool_rebalance_moves_complete[1h]) == 0`, "spool_rebalance_moves_complete is not"},
		{`increase(spool_scrub_corrupt_batches[1h]) > 0`, "spool_scrub_corrupt_batches is not"},
	} {
		err := checkAlertExpr(c.expr, scraped)
		switch {
		case c.wrong == "" && err != nil:
			t.Errorf("%s: %v", c.expr, err)
		case c.wrong != "" && (err == nil || !strings.Contains(err.Error(), c.wrong)):
			t.Errorf("%s: error %v, want one saying %q", c.expr, err, c.wrong)
		}
	}
}

var (
	scrapeOnce   sync.Mutex
	scrapeCached scrapedSeries
)

// realNodeScrape is scrapeRealNode's result, from the first test that
// asked.
func realNodeScrape(t *testing.T) scrapedSeries {
	t.Helper()
	scrapeOnce.Lock()
	defer scrapeOnce.Unlock()
	if scrapeCached == nil {
		scrapeCached = scrapeRealNode(t)
	}
	return scrapeCached
}

// metricCalls are go-metrics' calls whose first argument is a metric key.
var metricCalls = map[string]bool{"IncrCounter": true, "IncrCounterWithLabels": true, "SetGauge": true,
	"SetGaugeWithLabels": true, "AddSample": true, "AddSampleWithLabels": true, "MeasureSince": true, "MeasureSinceWithLabels": true}

// sourceMetricNames is every Prometheus name the node's code emits with a
// key of literals (IncrCounter([]string{"scrub", "corrupt_batches"}, 1) is
// spool_scrub_corrupt_batches), and every spool_* word its non-test files
// hold, comments included (where names built at run time are listed).
func sourceMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	word := regexp.MustCompile(`\bspool_[a-z0-9_]+`)
	for _, dir := range []string{"node", "wire", "membership", "partition"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, w := range word.FindAllString(string(src), -1) {
				names[w] = true
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, src, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !metricCalls[sel.Sel.Name] {
					return true
				}
				lit, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					return true
				}
				var parts []string
				for _, e := range lit.Elts {
					b, ok := e.(*ast.BasicLit)
					if !ok {
						return true
					}
					s, _ := strconv.Unquote(b.Value)
					parts = append(parts, s)
				}
				name := strings.Join(parts, "_")
				if !strings.HasPrefix(name, "spool_") {
					name = "spool_" + name
				}
				names[name] = true
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestDocsMetricNames: every spool_* series docs/ and the README name is
// on a real node's /metrics or emitted by the node's code.
func TestDocsMetricNames(t *testing.T) {
	scraped := realNodeScrape(t)
	fromSource := sourceMetricNames(t)
	if !fromSource["spool_scrub_corrupt_batches"] || !fromSource["spool_replication_stopped_replicas"] {
		t.Fatalf("the metric names of the code were not read: %d found", len(fromSource))
	}
	known := func(name string) bool {
		for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
			if _, ok := scraped[name+suffix]; ok {
				return true
			}
		}
		return fromSource[name]
	}
	word := regexp.MustCompile(`\bspool_[a-z0-9_]*[a-z0-9]`)
	checked := 0
	for _, f := range markdownFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			for _, loc := range word.FindAllStringIndex(l, -1) {
				name, after := l[loc[0]:loc[1]], l[loc[1]:]
				if strings.HasPrefix(after, ".md") || strings.HasPrefix(after, "-") {
					continue // a page of docs/cli, spool_topic_add-partitions.md
				}
				checked++
				if !known(name) {
					t.Errorf("%s:%d: %s is no series a node exports", f, i+1, name)
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d metric names found in the docs", checked)
	}
}

// scrapeRealNode starts `spool node`, gives its scrub a damaged batch to
// find (counters appear on /metrics once counted), and returns /metrics.
func scrapeRealNode(t *testing.T) scrapedSeries {
	t.Helper()
	kafka, admin, dir := freeAddr(t), freeAddr(t), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, stderr, err := runCLIContext(ctx, "", "node", "--data-dir", dir, "--kafka-addr", kafka, "--admin-addr", admin,
			"--gossip-addr", "127.0.0.1:0", "--log-level", "warn", "--segment-bytes", "1024",
			"--scrub-rate", "67108864", "--scrub-interval", "1h")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, stderr)
		}
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("spool node: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("node did not stop")
		}
	})
	retry.Run(t, 20*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("node exited before ready: %v", err)
		default:
		}
		return readyz(admin)
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("scrubbed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer pcancel()
	for i := 0; i < 20; i++ { // a batch each, about 170 bytes: several sealed segments
		if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte(fmt.Sprintf("%0100d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// The last byte of the first, sealed, segment is its last batch's
	// payload, under the batch's CRC.
	seg := filepath.Join(dir, "scrubbed-0", fmt.Sprintf("%020d.log", 0))
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{b[len(b)-1] ^ 0x10}, int64(len(b)-1)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, _, err := runCLI(t, "", "scrub", "--start", "--admin", admin); err != nil {
		t.Fatalf("spool scrub --start: %v\n%s", err, out)
	}

	var scraped scrapedSeries
	retry.Run(t, 20*time.Second, func() error {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		scraped = parseScrape(string(body))
		for _, name := range []string{"spool_scrub_corrupt_batches", "spool_replication_stopped_replicas"} {
			if _, ok := scraped[name]; !ok {
				return fmt.Errorf("no %s on /metrics yet", name)
			}
		}
		return nil
	})
	return scraped
}
