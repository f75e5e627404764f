package membership

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func TestLedRunsAndUnion(t *testing.T) {
	got := ledRuns([]int32{5, 1, 2, 2, 0, 7, 6})
	want := []LedRun{{0, 3}, {5, 8}}
	if !slices.Equal(got, want) {
		t.Fatalf("ledRuns = %v, want %v", got, want)
	}
	u := unionLed(want, []LedRun{{3, 4}, {9, 10}})
	if w := []LedRun{{0, 4}, {5, 8}, {9, 10}}; !slices.Equal(u, w) {
		t.Fatalf("union = %v, want %v", u, w)
	}
	if u2 := unionLed(u, []LedRun{{4, 5}, {8, 9}}); !slices.Equal(u2, []LedRun{{0, 10}}) {
		t.Fatalf("adjacent runs not joined: %v", u2)
	}
	e := TopicEntry{Led: want}
	for p, led := range []bool{true, true, true, false, false, true, true, true, false} {
		if e.HasLed(int32(p)) != led {
			t.Fatalf("HasLed(%d) = %v", p, !led)
		}
	}
	if e.LedCount() != 6 {
		t.Fatalf("LedCount = %d", e.LedCount())
	}
}

// Marks from a peer are checked like the rest of an entry.
func TestMergeRejectsBadLedRuns(t *testing.T) {
	base := newTopic("led", 4, 1)
	for i, bad := range [][]LedRun{
		{{0, 5}},         // beyond the count
		{{2, 2}},         // empty
		{{-1, 1}},        // negative
		{{2, 3}, {0, 1}}, // not ascending
		{{0, 1}, {1, 2}}, // adjacent, not canonical
		{{0, 1}, {0, 2}, {1, 3}, {2, 4}, {3, 4}},
	} {
		e := base.clone()
		e.Led = bad
		if err := e.validate(); err == nil {
			t.Fatalf("case %d: %v accepted", i, bad)
		}
	}
	tomb := TopicEntry{Name: "led", ID: base.ID, Deleted: true, Lamport: 2, Origin: 1, Led: []LedRun{{0, 1}}}
	if err := tomb.validate(); err == nil {
		t.Fatal("a tombstone with led partitions accepted")
	}
}

// A mark leaves the entry's version alone, survives a concurrent
// alteration that wins the version, and changes the digest so anti-entropy
// spreads it; a newer incarnation does not inherit it.
func TestMarkLedMergesAsAUnion(t *testing.T) {
	a, b := NewCatalog(), NewCatalog()
	e := newTopic("marks", 3, 1)
	mergeInto(t, a, e)
	mergeInto(t, b, e)
	before := a.Digest()
	marked := e.clone()
	marked.Led = ledRuns([]int32{0, 2})
	mergeInto(t, a, marked)
	if a.Digest() == before {
		t.Fatal("a mark does not change the digest")
	}
	altered, _ := alterOn(t, b, 2, "marks", moveTo(1, 2, 3, 4))
	mergeInto(t, a, altered)
	mergeInto(t, b, marked)
	ea, _ := a.Get("marks")
	eb, _ := b.Get("marks")
	if !sameEntry(ea, eb) || a.Digest() != b.Digest() {
		t.Fatalf("catalogs differ:\n%+v\n%+v", ea, eb)
	}
	if !ea.HasLed(0) || ea.HasLed(1) || !ea.HasLed(2) || ea.version() != altered.version() {
		t.Fatalf("merged entry %+v", ea)
	}
	if _, ok := ea.Move(1); !ok {
		t.Fatal("the concurrent move was lost")
	}
	spec := TopicSpec{Name: "marks", Partitions: 3, ReplicationFactor: 3, Config: map[string]string{"x": "y"}}
	tomb := TopicEntry{Name: "marks", ID: ea.ID, Deleted: true, Lamport: a.tick(), Origin: 1}
	mergeInto(t, a, tomb)
	again := TopicEntry{Name: "marks", ID: deriveTopicID(spec, tomb), Partitions: 3, ReplicationFactor: 3, Config: spec.Config,
		Replicas: PlaceTopic("marks", 3, []int32{1, 2, 3, 4, 5}, 3), Lamport: tomb.Lamport + 1, Origin: 1}
	mergeInto(t, a, again)
	mergeInto(t, a, ea) // the old incarnation's marks arrive late
	if got, _ := a.Get("marks"); got.ID != again.ID || len(got.Led) != 0 {
		t.Fatalf("a new incarnation inherited marks: %+v", got)
	}
}

// A mark on one agent reaches every agent, for a topic too big for a user
// event too (announced by a hint that carries the marked count, as the
// version does not change), and is saved.
func TestMarkLedSpreads(t *testing.T) {
	nodes := cluster(t, 3)
	for _, parts := range []int32{3, 2000} {
		name := fmt.Sprintf("led-%d", parts)
		e, err := nodes[0].CreateTopic(TopicSpec{Name: name, Partitions: parts, ReplicationFactor: 2})
		if err != nil {
			t.Fatal(err)
		}
		retry.Run(t, 10*time.Second, sameCatalog(nodes...))
		if err := nodes[1].MarkLed([]LedMark{{Name: name, ID: e.ID, Partitions: []int32{parts - 1, 0}}}); err != nil {
			t.Fatal(err)
		}
		if got, _ := nodes[1].Topic(name); got.version() != e.version() {
			t.Fatalf("a mark changed the version: %v, was %v", got.version(), e.version())
		}
		retry.Run(t, 10*time.Second, func() error {
			for _, n := range nodes {
				got, _ := n.Topic(name)
				if !got.HasLed(0) || !got.HasLed(parts-1) || got.LedCount() != 2 {
					return fmt.Errorf("%s: %s led %v", n.cfg.NodeName, name, got.Led)
				}
				saved, err := loadCatalog(n.catalogPath)
				if err != nil {
					return err
				}
				if disk, _ := saved.Get(name); !slices.Equal(disk.Led, got.Led) {
					return fmt.Errorf("%s: %s led %v on disk, %v in memory", n.cfg.NodeName, name, disk.Led, got.Led)
				}
			}
			return nil
		})
	}
}

// Two creates of one spec made concurrently (two auto-creates) derive one
// topic id, the same partitions' Raft groups: the marks made under the
// losing create's entry hold for the winner's, in either merge order.
func TestMergeKeepsMarksAcrossCreatesOfOneID(t *testing.T) {
	lost := newTopic("twice", 3, 1)
	won := newTopic("twice", 3, 2)
	if lost.ID != won.ID || compareLineage(won, lost) <= 0 {
		t.Fatalf("want one id, two lineages, origin 2 winning: %v %v", lost.ID, won.ID)
	}
	lost.Led = ledRuns([]int32{0, 2})
	won.Led = ledRuns([]int32{1})
	for _, order := range [][]TopicEntry{{lost, won}, {won, lost}} {
		c := NewCatalog()
		mergeInto(t, c, order...)
		got, _ := c.Get("twice")
		if got.Origin != 2 || !slices.Equal(got.Led, []LedRun{{0, 3}}) {
			t.Fatalf("merged %v then %v: origin %d, led %v", order[0].Origin, order[1].Origin, got.Origin, got.Led)
		}
	}
}
