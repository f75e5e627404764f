package membership

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/spool-log/spool/internal/retry"
)

// alterOn is AlterTopic on a bare catalog, as node origin: the change is
// made on a copy, stamped with a new tick, merged. It returns the entry
// that would be broadcast and whether the alteration lost.
func alterOn(t *testing.T, c *Catalog, origin int32, name string, change func(*TopicEntry) error) (TopicEntry, bool) {
	t.Helper()
	cur, ok := c.Get(name)
	if !ok || cur.Deleted {
		t.Fatalf("alter %s: unknown", name)
	}
	next := cur.clone()
	if err := change(&next); err != nil {
		t.Fatalf("alter %s: %v", name, err)
	}
	next.Lamport, next.Origin = c.tick(), origin
	changed := stampAlteration(cur, &next)
	if err := next.validate(); err != nil {
		t.Fatalf("alter %s: %v", name, err)
	}
	if _, err := c.Merge([]TopicEntry{next}); err != nil {
		t.Fatal(err)
	}
	stored, _ := c.Get(name)
	return next, lostAlteration(stored, next, changed, !maps.Equal(cur.Config, next.Config))
}

func mergeInto(t *testing.T, c *Catalog, es ...TopicEntry) {
	t.Helper()
	if _, err := c.Merge(es); err != nil {
		t.Fatal(err)
	}
}

func moveTo(p int32, target ...int32) func(*TopicEntry) error {
	return func(e *TopicEntry) error {
		i, ok := slices.BinarySearchFunc(e.Moves, p, func(m PartitionMove, p int32) int { return int(m.Partition - p) })
		m := PartitionMove{Partition: p, Target: target, Started: 1000 + int64(p)}
		if ok {
			e.Moves[i] = m
		} else {
			e.Moves = slices.Insert(e.Moves, i, m)
		}
		return nil
	}
}

func newTopic(name string, partitions int32, origin int32) TopicEntry {
	e := TopicEntry{Name: name, Partitions: partitions, ReplicationFactor: 3, Lamport: 1, Origin: origin}
	e.ID = deriveTopicID(TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 3}, TopicEntry{})
	e.Replicas = PlaceTopic(name, partitions, []int32{1, 2, 3, 4, 5}, 3)
	return e
}

// A node recording moves of partitions 0 and 1 while another ends the move
// of partition 2: after the exchange, in either order, both catalogs hold
// all three, and the same entry and digest.
func TestMergeKeepsConcurrentAlterationsOfDifferentPartitions(t *testing.T) {
	for _, order := range []string{"a first", "b first"} {
		t.Run(order, func(t *testing.T) {
			a, b := NewCatalog(), NewCatalog()
			e := newTopic("t", 4, 1)
			mergeInto(t, a, e)
			mergeInto(t, b, e)
			started, _ := alterOn(t, a, 1, "t", moveTo(2, 5, 4, 3))
			mergeInto(t, b, started)
			// Concurrently: a records two more moves, b (partition 2's
			// leader) ends partition 2's.
			m1, lost1 := alterOn(t, a, 1, "t", moveTo(0, 5, 4, 2))
			m2, lost2 := alterOn(t, a, 1, "t", moveTo(1, 4, 5, 1))
			end, lost3 := alterOn(t, b, 2, "t", EndMove(2, []int32{5, 4, 3}))
			if lost1 || lost2 || lost3 {
				t.Fatal("a local alteration lost on its own node")
			}
			if order == "a first" {
				mergeInto(t, b, m1, m2)
				mergeInto(t, a, end)
			} else {
				mergeInto(t, a, end)
				mergeInto(t, b, m2, m1)
			}
			for _, c := range []*Catalog{a, b} {
				got, _ := c.Get("t")
				if _, ok := got.Move(0); !ok {
					t.Errorf("move of partition 0 lost: %+v", got.Moves)
				}
				if _, ok := got.Move(1); !ok {
					t.Errorf("move of partition 1 lost: %+v", got.Moves)
				}
				if _, ok := got.Move(2); ok || !slices.Equal(got.Replicas[2], []int32{5, 4, 3}) {
					t.Errorf("end of partition 2's move lost: replicas %v moves %+v", got.Replicas[2], got.Moves)
				}
			}
			ea, _ := a.Get("t")
			eb, _ := b.Get("t")
			if !sameEntry(ea, eb) || a.Digest() != b.Digest() {
				t.Fatalf("catalogs differ:\n%+v\n%+v", ea, eb)
			}
			if ea.Lamport != max(m2.Lamport, end.Lamport) {
				t.Errorf("version %d, want the newer alteration's", ea.Lamport)
			}
		})
	}
}

// Concurrent changes of one partition settle on the newer stamp, on every
// node whatever the order, and the loser's node sees its alteration lost.
func TestMergeSettlesConcurrentAlterationsOfOnePartition(t *testing.T) {
	a, b := NewCatalog(), NewCatalog()
	e := newTopic("t", 2, 1)
	mergeInto(t, a, e)
	mergeInto(t, b, e)
	fromA, _ := alterOn(t, a, 1, "t", moveTo(0, 1, 2, 3))
	fromB, _ := alterOn(t, b, 2, "t", moveTo(0, 3, 4, 5)) // same Lamport time, higher origin
	mergeInto(t, a, fromB)
	mergeInto(t, b, fromA)
	for _, c := range []*Catalog{a, b} {
		got, _ := c.Get("t")
		if m, _ := got.Move(0); !slices.Equal(m.Target, []int32{3, 4, 5}) {
			t.Errorf("partition 0 target %v, want origin 2's [3 4 5]", m.Target)
		}
	}
	if a.Digest() != b.Digest() {
		t.Error("digests differ")
	}
	stored, _ := a.Get("t")
	if !lostAlteration(stored, fromA, []int32{0}, false) {
		t.Error("a's alteration of partition 0 lost but lostAlteration says not")
	}
	if lostAlteration(stored, fromB, []int32{0}, false) {
		t.Error("b's alteration won but lostAlteration says lost")
	}
	// An alteration of partition 1 that a newer one of partition 0 outdated
	// as a version still holds: it did not lose.
	c := NewCatalog()
	mergeInto(t, c, e)
	p1, _ := alterOn(t, c, 0, "t", moveTo(1, 1, 2, 3)) // (2, 0): below both
	mergeInto(t, c, fromA, fromB)
	stored, _ = c.Get("t")
	if lostAlteration(stored, p1, []int32{1}, false) {
		t.Error("lostAlteration: partition 1 kept but said lost")
	}
}

// Entries without stamps (previous version's files and peers) merge as
// whole entries, the newer version winning, and hash as before.
func TestMergeOfUnstampedEntriesIsWholeEntry(t *testing.T) {
	old := newTopic("t", 3, 1)
	older := old.clone()
	older.Lamport, older.Origin = 5, 2
	older.Replicas[0] = []int32{5, 4, 3}
	newer := old.clone()
	newer.Lamport, newer.Origin = 6, 1
	newer.Replicas[1] = []int32{5, 4, 3}
	for _, order := range [][]TopicEntry{{older, newer}, {newer, older}} {
		c := NewCatalog()
		mergeInto(t, c, old)
		mergeInto(t, c, order...)
		got, _ := c.Get("t")
		if !sameEntry(got, newer) {
			t.Errorf("got %+v, want the newer entry whole %+v", got, newer)
		}
	}
	raw, _ := json.Marshal(newer)
	if strings.Contains(string(raw), "born") || strings.Contains(string(raw), "stamps") {
		t.Errorf("unstamped entry encodes stamps: %s", raw)
	}
	// The digest of an unstamped catalog is the previous formula's.
	c := NewCatalog()
	mergeInto(t, c, newer)
	if got, want := c.Digest(), legacyDigest(newer); got != want {
		t.Errorf("digest %x, previous version's %x", got, want)
	}
	// A stamped entry is told apart from its unstamped version.
	s := NewCatalog()
	mergeInto(t, s, old)
	alterOn(t, s, 1, "t", moveTo(2, 1, 2, 3))
	st, _ := s.Get("t")
	bare := st.clone()
	bare.Born, bare.Stamps, bare.Wide = Stamp{}, nil, Stamp{}
	b := NewCatalog()
	mergeInto(t, b, bare)
	if b.Digest() == s.Digest() {
		t.Error("stamped and unstamped entries of one version hash alike")
	}
}

// A move recorded on one node and a config change made on another at the
// same time, the move later in Lamport time: after the exchange, in either
// order, both catalogs keep both, with one entry and digest, and neither
// node was told its alteration lost. An entry relayed by a node of the
// previous version (which drops the topic-wide stamp) merges as before:
// its configs follow its version.
func TestMergeKeepsConfigChangeConcurrentWithMove(t *testing.T) {
	setRetention := func(v string) func(*TopicEntry) error {
		return func(e *TopicEntry) error {
			e.Config = map[string]string{"retention.ms": v}
			return nil
		}
	}
	for _, order := range []string{"move first", "config first"} {
		t.Run(order, func(t *testing.T) {
			a, b := NewCatalog(), NewCatalog()
			e := newTopic("t", 3, 1)
			mergeInto(t, a, e)
			mergeInto(t, b, e)
			a.tick()
			a.tick() // a's clock ahead: its move outdates b's change as a version
			move, lostMove := alterOn(t, a, 1, "t", moveTo(1, 5, 4, 3))
			conf, lostConf := alterOn(t, b, 2, "t", setRetention("1000"))
			if lostMove || lostConf {
				t.Fatal("a local alteration lost on its own node")
			}
			if move.version().compare(conf.version()) <= 0 {
				t.Fatalf("move %v not after the config change %v", move.version(), conf.version())
			}
			if order == "move first" {
				mergeInto(t, b, move)
				mergeInto(t, a, conf)
			} else {
				mergeInto(t, a, conf)
				mergeInto(t, b, move)
			}
			for i, c := range []*Catalog{a, b} {
				got, _ := c.Get("t")
				if _, ok := got.Move(1); !ok {
					t.Errorf("catalog %d: move of partition 1 lost: %+v", i, got.Moves)
				}
				if got.Config["retention.ms"] != "1000" {
					t.Errorf("catalog %d: config change lost: %v", i, got.Config)
				}
				if got.version() != move.version() || got.wide() != conf.version() {
					t.Errorf("catalog %d: version %v wide %v, want the move's and the change's", i, got.version(), got.wide())
				}
				if err := got.validate(); err != nil {
					t.Errorf("catalog %d: %v", i, err)
				}
			}
			ea, _ := a.Get("t")
			eb, _ := b.Get("t")
			if !sameEntry(ea, eb) || a.Digest() != b.Digest() {
				t.Fatalf("catalogs differ:\n%+v\n%+v", ea, eb)
			}
			stored, _ := a.Get("t")
			if lostAlteration(stored, conf, nil, true) || lostAlteration(stored, move, []int32{1}, false) {
				t.Error("lostAlteration says an alteration that survived lost")
			}
			if !a.holdsWrite("t", conf.version()) {
				t.Error("holdsWrite does not find the config change")
			}
			// The same entry without its topic-wide stamp hashes apart.
			bare := ea.clone()
			bare.Wide = Stamp{}
			c := NewCatalog()
			mergeInto(t, c, bare)
			if c.Digest() == a.Digest() {
				t.Error("entries differing only in the topic-wide stamp hash alike")
			}
		})
	}
	// Unstamped entries (the previous version's): the configs follow the
	// version, whatever the order.
	old := newTopic("t", 2, 1)
	conf := old.clone()
	conf.Lamport, conf.Origin, conf.Config = 5, 2, map[string]string{"retention.ms": "1000"}
	moved := old.clone()
	moved.Lamport, moved.Origin = 6, 1
	moved.Replicas[1] = []int32{5, 4, 3}
	for _, order := range [][]TopicEntry{{conf, moved}, {moved, conf}} {
		c := NewCatalog()
		mergeInto(t, c, old)
		mergeInto(t, c, order...)
		if got, _ := c.Get("t"); !sameEntry(got, moved) {
			t.Errorf("got %+v, want the newer unstamped entry whole %+v", got, moved)
		}
	}
	raw, _ := json.Marshal(moved)
	if strings.Contains(string(raw), "wide") {
		t.Errorf("unstamped entry encodes a topic-wide stamp: %s", raw)
	}
}

// A delete wins over an alteration made concurrently, whatever their
// Lamport times; a create after the delete wins over both.
func TestMergeDeleteBeatsConcurrentAlteration(t *testing.T) {
	e := newTopic("t", 2, 1)
	a, b := NewCatalog(), NewCatalog()
	mergeInto(t, a, e)
	mergeInto(t, b, e)
	tomb := TopicEntry{Name: "t", ID: e.ID, Deleted: true, Lamport: a.tick(), Origin: 1}
	mergeInto(t, a, tomb)
	b.tick()
	b.tick()
	alt, _ := alterOn(t, b, 2, "t", moveTo(0, 1, 2, 3)) // Lamport above the tombstone's
	if alt.Lamport <= tomb.Lamport {
		t.Fatalf("alteration at %d not above the delete at %d", alt.Lamport, tomb.Lamport)
	}
	mergeInto(t, a, alt)
	mergeInto(t, b, tomb)
	for _, c := range []*Catalog{a, b} {
		if got, _ := c.Get("t"); !got.Deleted {
			t.Errorf("alteration won over the delete: %+v", got)
		}
	}
	spec := TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3}
	re := TopicEntry{Name: "t", ID: deriveTopicID(spec, tomb), Partitions: 1, ReplicationFactor: 3, Replicas: [][]int32{{1, 2, 3}}, Lamport: tomb.Lamport + 1, Origin: 3}
	mergeInto(t, a, re)
	mergeInto(t, a, alt, tomb, e)
	if got, _ := a.Get("t"); got.ID != re.ID || got.Deleted {
		t.Errorf("create after the delete lost: %+v", got)
	}
}

// legacyDigest is Catalog.Digest as the previous version computed it, for
// a catalog of one live, explicit topic entry.
func legacyDigest(e TopicEntry) uint64 {
	buf := append([]byte(e.Name), 0)
	buf = binary.BigEndian.AppendUint64(buf, e.Lamport)
	buf = binary.BigEndian.AppendUint32(buf, uint32(e.Origin))
	buf = append(buf, e.ID[:]...)
	buf = append(buf, 0) // flags: not deleted, not auto
	return xxhash.Sum64(buf)
}

// Random alterations, deletes, creates and growths on several nodes, with
// messages delivered late, out of order and more than once: every node ends
// with the same entries and digest, the same as any order of merging every
// entry made, and within the winning incarnation no partition write is lost
// but to a newer one.
func TestMergeConvergesUnderRandomDelivery(t *testing.T) {
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	for seed := range uint64(rounds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { convergeOnce(t, seed) })
	}
}

func convergeOnce(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const nodes = 4
	cats := make([]*Catalog, nodes)
	for i := range cats {
		cats[i] = NewCatalog()
	}
	names := []string{"a", "b"}
	var sent []TopicEntry
	type msg struct {
		to int
		e  TopicEntry
	}
	var inflight []msg
	send := func(from int, e TopicEntry) {
		sent = append(sent, e)
		for i := range cats {
			if i != from {
				inflight = append(inflight, msg{i, e})
			}
		}
	}
	for _, n := range names {
		e := newTopic(n, 2+rng.Int32N(3), 1)
		mergeInto(t, cats[0], e)
		send(0, e)
	}
	brokers := []int32{1, 2, 3, 4, 5}
	for range 80 {
		// Deliver a few messages, in random order, sometimes twice.
		for range rng.IntN(4) {
			if len(inflight) == 0 {
				break
			}
			i := rng.IntN(len(inflight))
			m := inflight[i]
			if rng.IntN(4) != 0 {
				inflight = slices.Delete(inflight, i, i+1)
			}
			mergeInto(t, cats[m.to], m.e)
		}
		node := rng.IntN(nodes)
		c, origin := cats[node], int32(node+1)
		name := names[rng.IntN(len(names))]
		cur, ok := c.Get(name)
		if !ok {
			continue
		}
		if cur.Deleted {
			if rng.IntN(3) == 0 {
				spec := TopicSpec{Name: name, Partitions: 1 + rng.Int32N(3), ReplicationFactor: 3}
				e := TopicEntry{Name: name, ID: deriveTopicID(spec, cur), Partitions: spec.Partitions, ReplicationFactor: 3,
					Replicas: PlaceTopic(name, spec.Partitions, brokers, 3), Lamport: cur.Lamport + 1, Origin: origin}
				mergeInto(t, c, e)
				send(node, e)
			}
			continue
		}
		var change func(*TopicEntry) error
		p := rng.Int32N(cur.Partitions)
		target := slices.Clone(brokers)
		rng.Shuffle(len(target), func(i, j int) { target[i], target[j] = target[j], target[i] })
		target = target[:3]
		switch op := rng.IntN(20); {
		case op == 0:
			tomb := TopicEntry{Name: name, ID: cur.ID, Deleted: true, Lamport: c.tick(), Origin: origin}
			mergeInto(t, c, tomb)
			send(node, tomb)
			continue
		case op == 1:
			change = func(e *TopicEntry) error {
				e.Replicas = append(e.Replicas, target)
				e.Partitions++
				return nil
			}
		case op == 2:
			change = func(e *TopicEntry) error {
				e.Config = map[string]string{"retention.ms": fmt.Sprint(rng.IntN(100))}
				return nil
			}
		case op == 3:
			// A leader's mark (MarkLed): the version stays.
			next := cur.clone()
			next.Led = unionLed(cur.Led, ledRuns([]int32{p}))
			mergeInto(t, c, next)
			send(node, next)
			continue
		case op < 8:
			change = moveTo(p, target...)
		case op < 12:
			change = CancelMove(p)
		case op < 14:
			change = func(e *TopicEntry) error {
				if i, ok := slices.BinarySearch(e.Pinned, p); ok {
					e.Pinned = slices.Delete(e.Pinned, i, i+1)
				} else {
					e.Pinned = slices.Insert(e.Pinned, i, p)
				}
				return nil
			}
		default:
			change = func(e *TopicEntry) error {
				if m, ok := e.Move(p); ok {
					return EndMove(p, m.Target)(e)
				}
				return AdoptReplicas(p, target)(e)
			}
		}
		next, _ := alterOn(t, c, origin, name, change)
		send(node, next)
	}
	// Everything arrives in the end, in random order, some twice.
	rng.Shuffle(len(inflight), func(i, j int) { inflight[i], inflight[j] = inflight[j], inflight[i] })
	for _, m := range inflight {
		mergeInto(t, cats[m.to], m.e)
		if rng.IntN(5) == 0 {
			mergeInto(t, cats[m.to], m.e)
		}
	}
	// And any merge order of everything sent gives the same catalog.
	for range 3 {
		c := NewCatalog()
		order := slices.Clone(sent)
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, e := range order {
			mergeInto(t, c, e)
		}
		cats = append(cats, c)
	}
	want := cats[0].Entries()
	for i, c := range cats[1:] {
		got := c.Entries()
		if len(got) != len(want) {
			t.Fatalf("catalog %d has %d entries, want %d", i+1, len(got), len(want))
		}
		for j := range got {
			if !sameEntry(got[j], want[j]) {
				t.Fatalf("catalog %d entry %s:\n%+v\nwant\n%+v", i+1, got[j].Name, got[j], want[j])
			}
		}
		if c.Digest() != cats[0].Digest() {
			t.Fatalf("catalog %d digest differs with equal entries", i+1)
		}
	}
	for _, final := range want {
		if err := final.validate(); err != nil {
			t.Fatalf("merged entry invalid: %v", err)
		}
		fs := final.stamps()
		for _, e := range sent {
			if e.Name != final.Name || compareLineage(e, final) != 0 || e.Deleted {
				continue
			}
			if e.Partitions > final.Partitions {
				t.Fatalf("%s: growth to %d lost (%d)", e.Name, e.Partitions, final.Partitions)
			}
			for p := range e.Partitions {
				if e.HasLed(p) && !final.HasLed(p) {
					t.Fatalf("%s partition %d: led mark lost: %v, final %v", e.Name, p, e.Led, final.Led)
				}
			}
			switch c := e.wide().compare(final.wide()); {
			case c > 0:
				t.Fatalf("%s: config write %v lost to older %v", e.Name, e.wide(), final.wide())
			case c == 0 && !maps.Equal(e.Config, final.Config):
				t.Fatalf("%s: topic-wide stamp %v with other configs", e.Name, e.wide())
			}
			for p, s := range e.stamps() {
				switch c := s.compare(fs[p]); {
				case c > 0:
					t.Fatalf("%s partition %d: write %v lost to older %v", e.Name, p, s, fs[p])
				case c == 0 && !samePartition(e, final, int32(p)):
					t.Fatalf("%s partition %d: stamp %v with other content", e.Name, p, s)
				}
			}
		}
	}
}

// Stamps from a peer are checked like the rest of an entry.
func TestMergeRejectsBadStamps(t *testing.T) {
	good := NewCatalog()
	e := newTopic("t", 3, 1)
	mergeInto(t, good, e)
	st, _ := alterOn(t, good, 2, "t", moveTo(1, 1, 2, 3))
	if len(st.Stamps) == 0 {
		t.Fatal("alteration of one partition left no stamps")
	}
	bad := []func(*TopicEntry){
		func(e *TopicEntry) { e.Stamps[0].From = 1 },
		func(e *TopicEntry) { e.Stamps = append(e.Stamps, StampRun{From: 9, Stamp: e.Stamps[0].Stamp}) },
		func(e *TopicEntry) { e.Stamps[1].Lamport = e.Lamport + 1 },
		func(e *TopicEntry) { e.Born = e.version() },
		func(e *TopicEntry) { e.Stamps = []StampRun{{From: 0, Stamp: e.version()}} },
		func(e *TopicEntry) { e.Born = Stamp{Lamport: e.Lamport + 5} },
		func(e *TopicEntry) { e.Wide = e.version() },
		func(e *TopicEntry) { e.Wide = Stamp{Lamport: e.Lamport + 1} },
		func(e *TopicEntry) { e.Born, e.Wide = Stamp{Lamport: 2}, Stamp{Lamport: 1} },
	}
	for i, f := range bad {
		x := st.clone()
		f(&x)
		if err := x.validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, x)
		} else if _, err := NewCatalog().Merge([]TopicEntry{x}); err == nil {
			t.Errorf("case %d: merged", i)
		}
	}
	tomb := TopicEntry{Name: "t", ID: e.ID, Deleted: true, Lamport: 9, Origin: 1, Born: Stamp{Lamport: 1}}
	if tomb.validate() == nil {
		t.Error("tombstone with born accepted")
	}
	tomb.Born, tomb.Wide = Stamp{}, Stamp{Lamport: 1}
	if tomb.validate() == nil {
		t.Error("tombstone with a topic-wide stamp accepted")
	}
	if !errors.Is(st.validate(), nil) {
		t.Error(st.validate())
	}
}

// Three nodes record moves of different partitions of one topic at once:
// none is told its alteration lost, and every node, and every node's saved
// catalog, ends with every move and one digest.
func TestAlterTopicConcurrentPartitionsOnAgents(t *testing.T) {
	nodes := cluster(t, 3)
	if _, err := nodes[0].CreateTopic(TopicSpec{Name: "pm", Partitions: 30, ReplicationFactor: 2}); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 5*time.Second, sameCatalog(nodes...))
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	targets := make([][]int32, 30)
	for p := range int32(30) {
		targets[p] = []int32{p%3 + 1, (p+1)%3 + 1}
	}
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := int32(i); p < 30; p += 3 {
				if _, err := n.AlterTopic("pm", n.SetMove(p, targets[p])); err != nil {
					errs <- fmt.Errorf("%s partition %d: %w", n.cfg.NodeName, p, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	retry.Run(t, 10*time.Second, sameCatalog(nodes...))
	for _, n := range nodes {
		saved, err := loadCatalog(n.catalogPath)
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := n.Topic("pm")
		disk, _ := saved.Get("pm")
		for _, e := range []TopicEntry{mem, disk} {
			for p := range int32(30) {
				m, ok := e.Move(p)
				if !ok && !slices.Equal(e.Replicas[p], targets[p]) || ok && !slices.Equal(m.Target, targets[p]) {
					t.Errorf("%s: partition %d: replicas %v move %+v, want a move to %v", n.cfg.NodeName, p, e.Replicas[p], m, targets[p])
				}
			}
		}
	}
}

// compareConfig is a total order: antisymmetric where the keys differ
// (the merge breaks ties of equal stamps by it, so both orders of a merge
// must agree).
func TestCompareConfigIsAntisymmetric(t *testing.T) {
	cases := []map[string]string{nil, {"a": "1"}, {"b": "1"}, {"a": "2"}, {"a": "1", "c": "1"}, {"b": "1", "c": "1"}}
	for _, x := range cases {
		for _, y := range cases {
			if got, back := compareConfig(x, y), compareConfig(y, x); got != -back || (got == 0) != maps.Equal(x, y) {
				t.Errorf("compareConfig(%v, %v) = %d, reversed %d", x, y, got, back)
			}
		}
	}
}
