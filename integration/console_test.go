package integration

// The live web console (node/admin/console) in a real headless Chromium
// driven with chromedp: a 3-node cluster seen through node 1's page. One tab
// stays on the cluster view from the start (the kill -9 must show there
// without a reload); a second tab walks the topics, groups and operations
// views while a producer and consumer groups work, a move and a drain wait
// paused, and a broker dies. A single node that requires the token for
// reads shows the token form and no data; another shows what its scrubber
// found.
// Screenshots of every view go to $SPOOL_TEST_ARTIFACTS/console, or to the
// test's artifact directory (go test -artifacts keeps them).

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// chromiumPath is Debian's chromium (scripts/test installs it).
const chromiumPath = "/usr/bin/chromium"

// needChromium fails (never skips) the test when Chromium is missing.
func needChromium(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("the console tests need Chromium at %s (Debian: apt-get install -y chromium; scripts/test installs it): %v", chromiumPath, err)
	}
}

// newBrowser starts a headless Chromium with a fresh profile and returns
// its first tab. The flags keep it off the network it would otherwise try
// (component updates, sync, QUIC probes), which hangs it on a closed
// machine.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	needChromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first run launches the browser, which lives as long as the
	// context of that run: no timeout on it (chromedp.Run says so).
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}

// newTab opens another tab of the browser of tab.
func newTab(t testing.TB, tab context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(tab)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, for as long as ctx
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// browse runs actions in tab, bounded.
func browse(t testing.TB, tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 45*time.Second) // a bound, generous for a loaded machine
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// evalJS evaluates expr in tab and returns its value.
func evalJS[T any](tab context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// waitPage polls expr (a JSON-returning expression) in tab until check
// accepts its value.
func waitPage[T any](t testing.TB, tab context.Context, timeout time.Duration, expr string, check func(T) error) T {
	t.Helper()
	var v T
	retry.Run(t, timeout, func() error {
		got, err := evalJS[T](tab, expr)
		if err != nil {
			return err
		}
		v = got
		return check(got)
	})
	return v
}

// artifactDir is where the screenshots go.
func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SPOOL_TEST_ARTIFACTS"); d != "" {
		dir := filepath.Join(d, "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// screenshot writes the whole page of tab as dir/name.png.
func screenshot(t *testing.T, tab context.Context, dir, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
}

// memberRows is the cluster view's members table: id -> status.
const memberRows = `Object.fromEntries([...document.querySelectorAll('#members tbody tr')].map(r => [r.dataset.member, r.dataset.status]))`

// TestConsoleBrowser: the console's four views, live, in Chromium.
func TestConsoleBrowser(t *testing.T) {
	dir := artifactDir(t)
	// Automatic rebalancing off: the fourth node the operations step adds
	// takes only the move the test asks for.
	args := WithArgs("--offsets-topic-partitions", "3", "--auto-rebalance=false")
	nodes := startCluster(t, 3, withQuickGroups, args)
	browser := newBrowser(t)
	base := "http://" + nodes[0].AdminAddr + "/"

	// The cluster view, open from here to the end, never reloaded.
	cluster := browser
	browse(t, cluster, chromedp.Navigate(base+"#cluster"))
	waitPage(t, cluster, 15*time.Second, memberRows, func(ms map[string]string) error {
		return retry.Check(len(ms) == 3 && ms["1"] == "alive" && ms["2"] == "alive" && ms["3"] == "alive", "members %v, want 3 alive", ms)
	})
	if raft, err := evalJS[string](cluster, `document.querySelector('#members tbody tr[data-member="2"] td:nth-child(8)').textContent`); err != nil || raft == "" || raft == "–" {
		t.Errorf("member 2's Raft address shows %q (%v)", raft, err)
	}
	screenshot(t, cluster, dir, "cluster")

	// Topics: a producer keeps writing; offsets and the rate chart move.
	topic := uniqueTopic("console")
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 2, 3, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitTopicEverywhere(t, nodes, topic)
	stopProducing := produceSteadily(t, franzClient(t, nodes[1].KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner())), topic)

	views := newTab(t, browser)
	browse(t, views, chromedp.Navigate(base+"#topics"))
	endOf := fmt.Sprintf(`(() => { const c = document.querySelector('tr[data-tp="%s/0"] td.end'); return c ? Number(c.textContent.replace(/,/g, '')) || 0 : 0 })()`, topic)
	chartMax := fmt.Sprintf(`(() => { const s = document.querySelector('svg[data-chart="produce-%s/0"]'); return s ? Number(s.dataset.max) : 0 })()`, topic)
	first := waitPage(t, views, 20*time.Second, endOf, func(end int64) error { return retry.Check(end > 0, "partition 0's end offset shows %d", end) })
	waitPage(t, views, 20*time.Second, endOf, func(end int64) error {
		return retry.Check(end > first, "partition 0's end offset still %d (was %d)", end, first)
	})
	waitPage(t, views, 20*time.Second, chartMax, func(max float64) error {
		return retry.Check(max > 0, "partition 0's produce chart peaks at %v records/s", max)
	})
	screenshot(t, views, dir, "topics")

	// Groups: the group commits far behind the log end, so it lags; then
	// a consumer of the group catches up and the lag falls to 0.
	group := "console-group-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: topic, Partition: 1, At: 1, LeaderEpoch: -1})
	retry.Run(t, 20*time.Second, func() error {
		resp, err := adm.CommitOffsets(ctxTimeout(t, 10*time.Second), group, offsets)
		if err != nil {
			return err
		}
		return resp.Error()
	})
	browse(t, views, chromedp.Navigate(base+"#groups"))
	lagOf := fmt.Sprintf(`(() => { const c = document.querySelector('[data-group="%s"] .total-lag'); return c ? Number(c.textContent) : -1 })()`, group)
	waitPage(t, views, 20*time.Second, lagOf, func(lag int64) error { return retry.Check(lag > 0, "group lag shows %d", lag) })
	screenshot(t, views, dir, "groups-lagging")
	stopProducing()
	stopConsuming := consumeGroup(t, nodes[2].KafkaAddr, group, topic)
	waitPage(t, views, 30*time.Second, lagOf, func(lag int64) error { return retry.Check(lag == 0, "group lag shows %d", lag) })
	lagChart := fmt.Sprintf(`(() => { const s = document.querySelector('svg[data-chart="lag-%s"]'); return s ? [Number(s.dataset.max), Number(s.dataset.last)] : [0, -1] })()`, group)
	waitPage(t, views, 10*time.Second, lagChart, func(v []float64) error {
		return retry.Check(len(v) == 2 && v[0] > 0 && v[1] == 0, "lag chart (max, last) = %v, want a peak then 0", v)
	})
	// A KIP-848 group beside the classic one: the broker assigns, and the
	// view shows the member with what it was given.
	group848 := group + "-848"
	stop848 := consumeGroup(t, nodes[1].KafkaAddr, group848, topic, kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	kind848 := fmt.Sprintf(`(() => { const g = document.querySelector('[data-group="%s"]'); if (!g) return ''; const a = g.querySelector('tr[data-member-id] td:last-child'); return g.querySelector('h3 .badge').textContent + '|' + (a ? a.textContent : '') })()`, group848)
	waitPage(t, views, 30*time.Second, kind848, func(v string) error {
		return retry.Check(v == "consumer (KIP-848)|"+topic+"[0,1]", "the KIP-848 group shows %q", v)
	})
	screenshot(t, views, dir, "groups-caught-up")
	stopConsuming()
	stop848()
	// What the groups read shows in the topics view's fetch-rate charts.
	browse(t, views, chromedp.Navigate(base+"#topics"))
	fetchMax := fmt.Sprintf(`Math.max(0, ...[...document.querySelectorAll('svg[data-chart^="fetch-%s/"]')].map(s => Number(s.dataset.max)))`, topic)
	waitPage(t, views, 10*time.Second, fetchMax, func(max float64) error {
		return retry.Check(max > 0, "the fetch charts peak at %v bytes/s after the groups read the topic", max)
	})
	screenshot(t, views, dir, "topics-fetched")

	// Operations: with moves paused, an operator's move is recorded and
	// waits at its first step; the view shows it, then, resumed, it ends.
	// The move takes one replica of a 3-replica partition to a fourth node.
	fourth := StartNode(t, WithID(4), WithJoin(nodes[0].GossipAddr), withQuickGroups, args)
	waitMembers(t, nodes[0], 20*time.Second, func(ms map[int]member) error { return wantStatus(ms, 4, "alive", 1, 2, 3, 4) })
	opsTopic := uniqueTopic("console-ops")
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, 3, nil, opsTopic); err != nil {
		t.Fatalf("create %s: %v", opsTopic, err)
	}
	waitTopicEverywhere(t, append(nodes, fourth), opsTopic)
	var placed []struct {
		Replicas []int32 `json:"replicas"`
		Leader   int32   `json:"leader"`
	}
	retry.Run(t, 20*time.Second, func() error { // a leader, so that the move has someone to report it
		if err := nodes[0].getJSON("/v1/placement?topic="+opsTopic, &placed); err != nil {
			return err
		}
		return retry.Check(len(placed) == 1 && len(placed[0].Replicas) == 3 && placed[0].Leader >= 0, "placement of %s: %+v", opsTopic, placed)
	})
	// The last (least preferred) replica goes to the broker that has none.
	target := []string{strconv.Itoa(int(placed[0].Replicas[0])), strconv.Itoa(int(placed[0].Replicas[1]))}
	for id := int32(1); id <= 4; id++ {
		if !slices.Contains(placed[0].Replicas, id) {
			target = append(target, strconv.Itoa(int(id)))
		}
	}
	admin := []string{"--admin", nodes[0].AdminAddr, "--brokers", nodes[0].KafkaAddr}
	if out, err := Spool(t, "", append([]string{"rebalance", "pause"}, admin...)...); err != nil {
		t.Fatalf("spool rebalance pause: %v: %s", err, out)
	}
	if out, err := Spool(t, "", append([]string{"partition", "move", opsTopic, "0", "--replicas", strings.Join(target, ",")}, admin...)...); err != nil {
		t.Fatalf("spool partition move: %v: %s", err, out)
	}
	browse(t, views, chromedp.Navigate(base+"#operations"))
	moveRow := fmt.Sprintf(`(() => { const r = document.querySelector('tr[data-move="%s/0"]'); const p = document.querySelector('#moves h3 .badge'); return (r ? r.textContent : '') + '|' + (p ? p.textContent : '') })()`, opsTopic)
	waitPage(t, views, 15*time.Second, moveRow, func(v string) error {
		return retry.Check(strings.Contains(v, opsTopic+"/0") && strings.Contains(v, "adding learner") && strings.HasSuffix(v, "|paused"),
			"the operations view shows %q, want the paused move at its first step", v)
	})
	waitPage(t, views, 10*time.Second, `['moves', 'drains', 'quarantine', 'scrub'].every(id => document.getElementById(id))`, func(ok bool) error {
		return retry.Check(ok, "the operations view lacks a section")
	})
	screenshot(t, views, dir, "operations")
	// A drain, still paused: broker 4 shows draining until it is cancelled.
	if out, err := Spool(t, "", append([]string{"decommission", "4"}, admin...)...); err != nil {
		t.Fatalf("spool decommission 4: %v: %s", err, out)
	}
	drainRow := `(() => { const r = document.querySelector('tr[data-drain="4"]'); return r ? r.textContent : '' })()`
	waitPage(t, views, 15*time.Second, drainRow, func(v string) error {
		return retry.Check(strings.HasPrefix(v, "4draining (moves paused)"), "the drains table shows %q, want broker 4 draining, its moves paused", v)
	})
	screenshot(t, views, dir, "operations-drain")
	if out, err := Spool(t, "", append([]string{"decommission", "4", "--cancel"}, admin...)...); err != nil {
		t.Fatalf("spool decommission 4 --cancel: %v: %s", err, out)
	}
	waitPage(t, views, 15*time.Second, drainRow, func(v string) error { return retry.Check(v == "", "the drains table still shows %q", v) })
	if out, err := Spool(t, "", append([]string{"rebalance", "resume"}, admin...)...); err != nil {
		t.Fatalf("spool rebalance resume: %v: %s", err, out)
	}
	waitPage(t, views, 30*time.Second, moveRow, func(v string) error {
		return retry.Check(v == "|running", "the operations view shows %q, want the move done and moves running", v)
	})
	retry.Run(t, 10*time.Second, func() error {
		if err := nodes[0].getJSON("/v1/placement?topic="+opsTopic, &placed); err != nil {
			return err
		}
		got := fmt.Sprint(placed[0].Replicas)
		return retry.Check(got == "["+strings.Join(target, " ")+"]", "after the move %s has replicas %s, want %v", opsTopic, got, target)
	})

	// kill -9 of node 3: the cluster tab, open since the start, shows it
	// failed within 10 s.
	killed := time.Now()
	nodes[2].Kill()
	waitPage(t, cluster, 10*time.Second, memberRows, func(ms map[string]string) error {
		return retry.Check(ms["3"] == "failed", "member 3 is %q", ms["3"])
	})
	took := time.Since(killed)
	t.Logf("the cluster view showed broker 3 failed %v after kill -9", took.Round(10*time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("broker 3 showed failed %v after kill -9, want within 10 s", took)
	}
	if timeline, err := evalJS[bool](cluster, `!!document.querySelector('.timeline li[data-event="fail"][data-member="3"]')`); err != nil || !timeline {
		t.Errorf("the event timeline has no failure of broker 3 (%v)", err)
	}
	screenshot(t, cluster, dir, "cluster-failed")
	browse(t, views, chromedp.Navigate(base+"#topics"))
	waitPage(t, views, 15*time.Second, `document.querySelectorAll('tr.under, tr.offline').length`, func(n int) error {
		return retry.Check(n > 0, "no partition highlighted after broker 3 died")
	})
	waitPage(t, views, 10*time.Second, endOf, func(end int64) error { return retry.Check(end > 0, "no offsets after broker 3 died") })

	screenshot(t, views, dir, "topics-under-replicated")

	// At most one request a second per view: the page's own resource
	// timings since it loaded (the member watch stream apart), against
	// its age and the views started in it (each starts with a request).
	for name, tab := range map[string]context.Context{"cluster": cluster, "views": views} {
		rate, err := evalJS[[]float64](tab, `(() => { const rs = performance.getEntriesByType('resource').filter(e => e.name.includes('/v1/') && !e.name.includes('/v1/members/watch')); return [rs.length, performance.now() / 1000, Number(document.body.dataset.starts)] })()`)
		if err != nil || len(rate) != 3 {
			t.Fatalf("%s tab's resource timings: %v %v", name, rate, err)
		}
		t.Logf("%s tab: %.0f requests in %.1f s, %.0f views started", name, rate[0], rate[1], rate[2])
		if rate[0] == 0 || rate[0] > rate[1]+rate[2] {
			t.Errorf("%s tab made %.0f requests in %.1f s over %.0f views, want at most one a second per view", name, rate[0], rate[1], rate[2])
		}
	}
}

// TestConsoleBrowserToken: with --admin-token-for-reads the page asks for
// the token and shows no data until it has it; with it, the views work.
func TestConsoleBrowserToken(t *testing.T) {
	dir := artifactDir(t)
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte("console-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := StartNode(t, WithArgs("--admin-token-file", tokenFile, "--admin-token-for-reads"))
	tab := newBrowser(t)
	browse(t, tab, chromedp.Navigate("http://"+n.AdminAddr+"/#cluster"))
	type page struct {
		Login bool   `json:"login"`
		Rows  int    `json:"rows"`
		Text  string `json:"text"`
	}
	const state = `({login: !document.getElementById('login').hidden, rows: document.querySelectorAll('[data-member], [data-tp], [data-group]').length, text: document.getElementById('main').textContent})`
	got := waitPage(t, tab, 10*time.Second, state, func(p page) error { return retry.Check(p.Login, "no token form: %+v", p) })
	if got.Rows != 0 || got.Text != "" {
		t.Errorf("without the token the page shows data: %+v", got)
	}
	screenshot(t, tab, dir, "token-required")
	// A wrong token: still the form, still nothing.
	browse(t, tab, chromedp.SendKeys("#token", "wrong"), chromedp.Click("#login-form button"))
	waitPage(t, tab, 10*time.Second, `!document.getElementById('login').hidden && document.getElementById('login-error').textContent !== ''`, func(ok bool) error {
		return retry.Check(ok, "a refused token did not bring the form back with why")
	})
	browse(t, tab, chromedp.SendKeys("#token", "console-s3cret"), chromedp.Click("#login-form button"))
	waitPage(t, tab, 10*time.Second, memberRows, func(ms map[string]string) error {
		return retry.Check(len(ms) == 1 && ms["1"] == "alive", "members %v with the token", ms)
	})
	if kept, err := evalJS[string](tab, `sessionStorage.getItem('spool-admin-token')`); err != nil || kept != "console-s3cret" {
		t.Errorf("token kept %q (%v), want it in sessionStorage", kept, err)
	}
	screenshot(t, tab, dir, "token-given")
}

// produceSteadily produces small batches to topic until the returned stop
// is called (which waits for the producer to finish).
func produceSteadily(t *testing.T, cl *kgo.Client, topic string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			recs := make([]*kgo.Record, 20)
			for j := range recs {
				recs[j] = &kgo.Record{Topic: topic, Partition: int32(j % 2), Value: []byte(fmt.Sprintf("record %d.%d", i, j))}
			}
			pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
			cl.ProduceSync(pctx, recs...) // an error is the test's stop or a blip: the checks see the offsets
			pcancel()
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// consumeGroup consumes topic in group (classic unless opts say
// otherwise), committing after every poll, until the returned stop is
// called.
func consumeGroup(t *testing.T, addr, group, topic string, opts ...kgo.Opt) (stop func()) {
	t.Helper()
	cl := franzClient(t, addr, append([]kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cl.PollFetches(ctx) // the records themselves do not matter: their commit does
			if ctx.Err() != nil {
				return
			}
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Logf("commit: %v", err)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// quarantineSize is a size as the page writes it (its bytes()).
var quarantineSize = regexp.MustCompile(`[0-9.]+ (B|KiB|MiB)`)

// TestConsoleBrowserScrub: a corrupt batch the scrubber finds shows in the
// operations view, with where it is and why.
func TestConsoleBrowserScrub(t *testing.T) {
	dir := artifactDir(t)
	n := newNode(t, WithArgs("--segment-bytes", "16384", "--scrub-interval", "1h"))
	n.Env = []string{"SPOOL_SCRUB_RATE=50000000"}
	n.Start()
	topic := uniqueTopic("console-scrub")
	produceBatches(t, n, topic, 800)
	logs := segmentLogs(t, filepath.Join(n.Dir, topic+"-0"))
	if len(logs) < 3 {
		t.Fatalf("%d segments; the test needs two sealed", len(logs))
	}
	b, bs := segmentBatches(t, logs[1])
	last := bs[5].pos + bs[5].h.Size() - 1
	writeBytesAt(t, logs[1], last, []byte{b[last] ^ 0x04})

	tab := newBrowser(t)
	browse(t, tab, chromedp.Navigate("http://"+n.AdminAddr+"/#operations"))
	if out, err := Spool(t, "", "scrub", "--start", "--admin", n.AdminAddr); err != nil {
		t.Fatalf("spool scrub --start: %v\n%s", err, out)
	}
	finding := `(() => { const r = document.querySelector('#scrub tbody tr'); const b = document.querySelectorAll('#scrub h3 .badge'); return (r ? r.textContent : '') + '|' + (b.length > 1 ? b[1].textContent : '') })()`
	waitPage(t, tab, 30*time.Second, finding, func(v string) error {
		return retry.Check(strings.HasPrefix(v, "corrupt"+topic+"/0") && strings.Contains(v, "crc") && strings.HasSuffix(v, "|1 findings"),
			"the scrubber section shows %q, want the corrupt batch of %s/0", v, topic)
	})
	screenshot(t, tab, dir, "operations-scrub")

	// A deleted topic's partition goes to this node's quarantine, which
	// the same view lists, with its name and size.
	doomed := uniqueTopic("console-doomed")
	produceBatches(t, n, doomed, 10)
	if out, err := Spool(t, "", "topic", "delete", doomed, "--brokers", n.KafkaAddr, "--admin", n.AdminAddr); err != nil {
		t.Fatalf("spool topic delete %s: %v\n%s", doomed, err, out)
	}
	entry := fmt.Sprintf(`(() => { const r = [...document.querySelectorAll('#quarantine tbody tr')].find(r => r.textContent.includes(%q)); const b = document.querySelector('#quarantine h3 .badge'); return (r ? r.textContent : '') + '|' + (b ? b.textContent : '') })()`, doomed+"-0")
	waitPage(t, tab, 30*time.Second, entry, func(v string) error {
		return retry.Check(strings.Contains(v, doomed+"-0") && quarantineSize.MatchString(v) && !strings.HasSuffix(v, "|0 entries"),
			"the quarantine section shows %q, want %s-0 dropped, with its size", v, doomed)
	})
	screenshot(t, tab, dir, "operations-quarantine")
}
