package integration

// What the live console costs the node serving it: node 1 of a 3-node
// cluster with -console.pages Chromium tabs open on its console against the
// same node with the tabs on about:blank, in alternating windows of
// -console.window, -console.pairs times; CPU is user+system time from
// /proc/PID/stat. The first window, before any page ever opened, is the
// node nobody has looked at (the sampler off). No figure is asserted (the
// suite runs it once with -benchtime 1x and short windows); the issue's
// goal, under 2 % of a core more with 10 pages, is read from the report:
//
//	go test ./integration -run '^$' -bench BenchmarkConsoleCost -benchtime 1x \
//	    -console.window 30s -console.pairs 3

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	consoleWindow = flag.Duration("console.window", 5*time.Second, "length of each window BenchmarkConsoleCost measures")
	consolePairs  = flag.Int("console.pairs", 1, "no-page/pages window pairs BenchmarkConsoleCost measures")
	consolePages  = flag.Int("console.pages", 10, "console tabs BenchmarkConsoleCost opens")
	consoleView   = flag.String("console.view", "", "the view every tab shows (cluster, topics, groups, operations); empty: the four in turn")
)

func BenchmarkConsoleCost(b *testing.B) {
	var nodes []*Node
	for id := 1; id <= 3; id++ {
		o := []NodeOption{WithID(id), withQuickGroups, WithArgs("--offsets-topic-partitions", "3", "--log-level", "warn")}
		if id > 1 {
			o = append(o, WithJoin(nodes[0].GossipAddr))
		}
		nodes = append(nodes, StartNode(b, o...))
	}
	for _, n := range nodes {
		waitMembers(b, n, 20*time.Second, func(ms map[int]member) error { return wantStatus(ms, 3, "alive", 1, 2, 3) })
	}
	adm := kadm.NewClient(franzClient(b, nodes[0].KafkaAddr))
	// Something for the views to show: 3 topics of 6 partitions and a
	// group with committed offsets on one of them.
	for i := range 3 {
		topic := fmt.Sprintf("cost-%d", i)
		if _, err := adm.CreateTopic(ctxTimeout(b, 20*time.Second), 6, 3, nil, topic); err != nil {
			b.Fatalf("create %s: %v", topic, err)
		}
	}
	offsets := kadm.Offsets{}
	for p := range int32(6) {
		offsets.Add(kadm.Offset{Topic: "cost-0", Partition: p, At: 0, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctxTimeout(b, 20*time.Second), "cost-group", offsets); err != nil {
		b.Fatalf("commit: %v", err)
	}

	measure := func() float64 { // node 1's CPU over one window, in % of a core
		before := processCPU(b, nodes[0])
		time.Sleep(*consoleWindow) // a measurement window, not a wait for a condition
		return 100 * (processCPU(b, nodes[0]) - before).Seconds() / consoleWindow.Seconds()
	}
	peers := func() time.Duration { return processCPU(b, nodes[1]) + processCPU(b, nodes[2]) }

	cold := measure()
	browser := newBrowser(b)
	tabs := []context.Context{browser}
	for len(tabs) < *consolePages {
		tabs = append(tabs, newTab(b, browser))
	}
	views := []string{"cluster", "topics", "groups", "operations"}
	open := func() {
		for i, tab := range tabs {
			v := *consoleView
			if v == "" {
				v = views[i%len(views)]
			}
			browse(b, tab, chromedp.Navigate("http://"+nodes[0].AdminAddr+"/#"+v))
		}
		// A hidden tab asks nothing (the page skips its ticks): every tab
		// must be a visible page for the figure to mean 10 open pages.
		for i, tab := range tabs {
			if state, err := evalJS[string](tab, `document.visibilityState`); err != nil || state != "visible" {
				b.Fatalf("tab %d is %q (%v), want visible", i, state, err)
			}
		}
	}
	closeAll := func() {
		for _, tab := range tabs {
			browse(b, tab, chromedp.Navigate("about:blank"))
		}
	}
	var none, pages, peersNone, peersPages float64
	for i := range *consolePairs {
		closeAll()
		p0 := peers()
		n := measure()
		pn := 100 * (peers() - p0).Seconds() / consoleWindow.Seconds()
		open()
		p0 = peers()
		w := measure()
		pw := 100 * (peers() - p0).Seconds() / consoleWindow.Seconds()
		b.Logf("pair %d: node 1 %.2f %% of a core with no page, %.2f with %d; its two peers %.2f and %.2f", i+1, n, w, *consolePages, pn, pw)
		none, pages, peersNone, peersPages = none+n, pages+w, peersNone+pn, peersPages+pw
	}
	n := float64(*consolePairs)
	none, pages, peersNone, peersPages = none/n, pages/n, peersNone/n, peersPages/n
	b.ReportMetric(cold, "cold_cpu_%")
	b.ReportMetric(none, "no_pages_cpu_%")
	b.ReportMetric(pages, "pages_cpu_%")
	b.ReportMetric(pages-none, "delta_cpu_%")
	b.ReportMetric((peersPages-peersNone)/2, "peer_delta_cpu_%")
	b.Logf("node 1, %% of a core: never looked at %.2f, %d pairs of %v: no pages %.2f, %d pages %.2f, more %.2f; each peer %.2f more",
		cold, *consolePairs, *consoleWindow, none, *consolePages, pages, pages-none, (peersPages-peersNone)/2)
}
