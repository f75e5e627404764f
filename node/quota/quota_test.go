package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/membership"
)

type fakeSource struct {
	qs  []membership.QuotaEntry
	gen uint64
}

func (f *fakeSource) Quotas() []membership.QuotaEntry { return f.qs }
func (f *fakeSource) QuotasGeneration() uint64        { return f.gen }

func (f *fakeSource) set(e membership.QuotaEntity, key string, v float64) {
	f.qs = append(f.qs, membership.QuotaEntry{Entity: e, Key: key, Value: v})
	f.gen++
}

var (
	named = membership.QuotaNamed
	dflt  = membership.QuotaDefault()
)

// Kafka's precedence: each level is found only when every more specific
// one is missing, and the rate is shared at the level's names.
func TestQuotaPrecedence(t *testing.T) {
	src := &fakeSource{}
	m := New(DefaultConfig(), src)
	if _, ok := m.Lookup(Produce, "alice", "app"); ok {
		t.Fatal("a quota applies with none set")
	}
	levels := []struct {
		e        membership.QuotaEntity
		user, id string // the rate's names
	}{
		{membership.QuotaEntity{ClientID: dflt}, "", "app"},
		{membership.QuotaEntity{ClientID: named("app")}, "", "app"},
		{membership.QuotaEntity{User: dflt}, "alice", ""},
		{membership.QuotaEntity{User: dflt, ClientID: dflt}, "alice", "app"},
		{membership.QuotaEntity{User: dflt, ClientID: named("app")}, "alice", "app"},
		{membership.QuotaEntity{User: named("alice")}, "alice", ""},
		{membership.QuotaEntity{User: named("alice"), ClientID: dflt}, "alice", "app"},
		{membership.QuotaEntity{User: named("alice"), ClientID: named("app")}, "alice", "app"},
	}
	// Set from the least specific up: each new one must win.
	for i, l := range levels {
		src.set(l.e, membership.QuotaProducerByteRate, float64(1000+i))
		a, ok := m.Lookup(Produce, "alice", "app")
		if !ok || a.Entity != l.e || a.Limit != float64(1000+i) {
			t.Fatalf("level %d (%s): found %+v %v", i, l.e, a, ok)
		}
		if a.key.user != l.user || a.key.clientID != l.id {
			t.Errorf("level %d (%s): rate kept per (%q, %q), want (%q, %q)", i, l.e, a.key.user, a.key.clientID, l.user, l.id)
		}
		if _, ok := m.Lookup(Fetch, "alice", "app"); ok {
			t.Fatalf("level %d: a producer quota applies to fetches", i)
		}
	}
	// Another user falls through alice's to the defaults.
	if a, ok := m.Lookup(Produce, "bob", "app"); !ok || a.Entity != (membership.QuotaEntity{User: dflt, ClientID: named("app")}) {
		t.Errorf("bob: %+v %v", a, ok)
	}
	if a, ok := m.Lookup(Produce, "bob", "other"); !ok || a.Entity != (membership.QuotaEntity{User: dflt, ClientID: dflt}) || a.key.clientID != "other" {
		t.Errorf("bob/other: %+v %v", a, ok)
	}
}

// The rate and throttle follow Kafka's arithmetic on a fake clock.
func TestQuotaRateAndThrottle(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{ClientID: named("app")}, membership.QuotaProducerByteRate, 1000)
	m := New(DefaultConfig(), src)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	// The window is padded to 10 s: 10,000 bytes at once are within.
	if d := m.Record(Produce, "u", "app", 10000); d != 0 {
		t.Fatalf("10 windows' worth at once throttled %v", d)
	}
	if d := m.Record(Produce, "u", "other", 1<<30); d != 0 {
		t.Fatalf("a client id without a quota throttled %v", d)
	}
	// 500 more: rate 1050/s over 10 s, 5 % over: 0.05 × 10 s.
	if d := m.Record(Produce, "u", "app", 500); d != 500*time.Millisecond {
		t.Fatalf("5%% over: throttled %v, want 500ms", d)
	}
	// Far over: bounded by one window.
	if d := m.Record(Produce, "u", "app", 100000); d != time.Second {
		t.Fatalf("far over: throttled %v, want the 1s bound", d)
	}
	// Once every sample has aged out, the rate is back to nothing.
	now = now.Add(12 * time.Second)
	if d := m.Record(Produce, "u", "app", 100); d != 0 {
		t.Fatalf("after the window: throttled %v", d)
	}
	// A steady 900/s for 30 s stays unthrottled; 1,200/s does not.
	now = now.Add(12 * time.Second)
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		if d := m.Record(Produce, "u", "app", 900); d != 0 {
			t.Fatalf("steady at the quota, second %d: throttled %v", i, d)
		}
	}
	throttled := false
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		throttled = throttled || m.Record(Produce, "u", "app", 1200) > 0
	}
	if !throttled {
		t.Error("20% over the quota for 30 s was never throttled")
	}
	// A removed quota stops applying.
	src.qs = nil
	src.gen++
	if d := m.Record(Produce, "u", "app", 1<<30); d != 0 {
		t.Errorf("after the quota's removal: throttled %v", d)
	}
}

// The mutation bucket: full at the start (quota × samples × window),
// refilled at the quota, allowed below zero by the last request, and the
// throttle is the time back to zero.
func TestQuotaMutationBucket(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{User: dflt}, membership.QuotaControllerMutationRate, 2)
	m := New(DefaultConfig(), src) // burst 2 × 11 × 1 s = 22
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	a, ok := m.Lookup(Mutation, "alice", "app")
	if !ok || a.key.user != "alice" {
		t.Fatalf("lookup: %+v %v", a, ok)
	}
	m.RecordMutations(a, 22)
	if m.MutationsExceeded(a) || m.MutationThrottle(a) != 0 {
		t.Fatal("the whole burst left the bucket below zero")
	}
	m.RecordMutations(a, 4)
	if !m.MutationsExceeded(a) || m.MutationThrottle(a) != 2*time.Second {
		t.Fatalf("4 past the burst at 2/s: exceeded %v, throttle %v, want 2s", m.MutationsExceeded(a), m.MutationThrottle(a))
	}
	now = now.Add(time.Second)
	if d := m.MutationThrottle(a); d != time.Second {
		t.Fatalf("a second later: throttle %v, want 1s", d)
	}
	now = now.Add(time.Minute)
	if m.MutationsExceeded(a) {
		t.Fatal("still over a minute later")
	}
	// Another user of the default has a bucket of its own.
	b, _ := m.Lookup(Mutation, "bob", "app")
	m.RecordMutations(a, 30)
	if m.MutationsExceeded(b) {
		t.Fatal("alice's mutations counted against bob")
	}
}

// A client that sends again as soon as each throttle is over gets its
// quota over a long run (Kafka's window: 11 samples of 1 s, on a fake
// clock): within 3 % over 1,000 s, the first ten seconds' burst included.
func TestQuotaLongRunHoldsTheRate(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{ClientID: named("a")}, membership.QuotaProducerByteRate, 1<<20)
	m := New(DefaultConfig(), src)
	start := time.Unix(1000, 0)
	now := start
	m.now = func() time.Time { return now }
	var total int64
	const run = 1000 * time.Second
	for now.Sub(start) < run {
		d := m.Record(Produce, "u", "a", 64<<10)
		total += 64 << 10
		now = now.Add(d + 2*time.Millisecond)
	}
	if r := float64(total) / (1 << 20) / run.Seconds(); r < 0.97 || r > 1.03 {
		t.Errorf("over %v the client got %.3f× its quota, want within 3%%", run, r)
	}
}

// connection_creation_rate: an ip's own quota, else the default ip's,
// each address counted on its own; a refused connection is not counted.
func TestQuotaConnectionRate(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{IP: dflt}, membership.QuotaConnectionCreationRate, 2)
	src.set(membership.QuotaEntity{IP: named("10.0.0.9")}, membership.QuotaConnectionCreationRate, 100)
	m := New(DefaultConfig(), src) // the window: at least 10 s, so 20 connections at once
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	for i := 0; i < 20; i++ {
		if d := m.AdmitConnection("10.0.0.1"); d != 0 {
			t.Fatalf("connection %d from 10.0.0.1 refused (%v) within the burst", i, d)
		}
	}
	if d := m.AdmitConnection("10.0.0.1"); d == 0 {
		t.Fatal("the 21st connection at once from 10.0.0.1 was taken")
	}
	if d := m.AdmitConnection("10.0.0.2"); d != 0 {
		t.Fatalf("another address under the default refused: %v", d)
	}
	for i := 0; i < 200; i++ {
		if d := m.AdmitConnection("10.0.0.9"); d != 0 {
			t.Fatalf("connection %d from 10.0.0.9 (its own 100/s) refused", i)
		}
	}
	// The refused one was not counted.
	found := false
	for _, tot := range m.Totals() {
		if tot.Kind == Connection && tot.IP == "10.0.0.1" {
			found = true
			if tot.Bytes != 20 {
				t.Errorf("10.0.0.1 counted %d connections, want the 20 taken", tot.Bytes)
			}
		}
	}
	if !found {
		t.Error("no connection rate kept for 10.0.0.1")
	}
	// An address written another way is the same address.
	if a, ok := m.LookupIP("::ffff:10.0.0.9"); !ok || a.Limit != 100 {
		t.Errorf("::ffff:10.0.0.9: %+v %v, want 10.0.0.9's own quota", a, ok)
	}
	// Once the burst has aged out of the window, connections are taken
	// again.
	now = now.Add(11 * time.Second)
	if d := m.AdmitConnection("10.0.0.1"); d != 0 {
		t.Fatalf("11 s later: refused %v", d)
	}
}

// The request path pays no allocation for quotas: with 1,000 users'
// quotas set, a client none applies to and one a quota applies to are
// looked up and recorded without allocating.
func TestQuotaHotPathAllocates(t *testing.T) {
	src := &fakeSource{}
	for i := 0; i < 1000; i++ {
		src.qs = append(src.qs, membership.QuotaEntry{Entity: membership.QuotaEntity{User: named(fmt.Sprintf("user-%d", i))},
			Key: membership.QuotaProducerByteRate, Value: 1 << 30})
	}
	src.gen++
	m := New(DefaultConfig(), src)
	m.Record(Produce, "user-7", "app", 100) // the rate is made once
	if n := testing.AllocsPerRun(1000, func() { m.Record(Produce, "nobody", "app", 100) }); n != 0 {
		t.Errorf("a client without a quota: %v allocations a request", n)
	}
	if n := testing.AllocsPerRun(1000, func() { m.Record(Produce, "user-7", "app", 100) }); n != 0 {
		t.Errorf("a client under its quota: %v allocations a request", n)
	}
}

func BenchmarkQuotaRecord1000Users(b *testing.B) {
	src := &fakeSource{}
	for i := 0; i < 1000; i++ {
		src.qs = append(src.qs, membership.QuotaEntry{Entity: membership.QuotaEntity{User: named(fmt.Sprintf("user-%d", i))},
			Key: membership.QuotaProducerByteRate, Value: 1 << 30})
	}
	src.gen++
	m := New(DefaultConfig(), src)
	b.Run("no-quota", func(b *testing.B) {
		for b.Loop() {
			m.Record(Produce, "nobody", "app", 100)
		}
	})
	b.Run("under-quota", func(b *testing.B) {
		for b.Loop() {
			m.Record(Produce, "user-7", "app", 100)
		}
	})
	// As the node does it: through the connection's cache.
	b.Run("under-quota-cached", func(b *testing.B) {
		var c Cache
		for b.Loop() {
			if a, ok := m.LookupCached(&c, Produce, "user-7", "app"); ok {
				m.RecordApplied(a, 100)
			}
		}
	})
}

// A connection's cache answers as Lookup does, and follows a change of
// the catalog or of the client's names.
func TestQuotaLookupCached(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{User: named("alice")}, membership.QuotaProducerByteRate, 1000)
	m := New(DefaultConfig(), src)
	var c Cache
	if a, ok := m.LookupCached(&c, Produce, "alice", "app"); !ok || a.Limit != 1000 {
		t.Fatalf("alice: %+v %v", a, ok)
	}
	if _, ok := m.LookupCached(&c, Produce, "bob", "app"); ok {
		t.Fatal("bob, after alice on the same cache: found alice's quota")
	}
	if _, ok := m.LookupCached(&c, Fetch, "bob", "app"); ok {
		t.Fatal("a fetch quota where none is set")
	}
	src.set(membership.QuotaEntity{User: named("bob")}, membership.QuotaProducerByteRate, 2000)
	if a, ok := m.LookupCached(&c, Produce, "bob", "app"); !ok || a.Limit != 2000 {
		t.Fatalf("bob after his quota was set: %+v %v", a, ok)
	}
	src.qs, src.gen = nil, src.gen+1
	if _, ok := m.LookupCached(&c, Produce, "bob", "app"); ok {
		t.Fatal("bob after every quota was removed: still found one")
	}
	if a, ok := m.LookupCached(nil, Produce, "bob", "app"); ok {
		t.Fatalf("no cache: %+v", a)
	}
}

// A fetch's allowance is what keeps its client within the quota: the
// window's worth before the first fetch, what is left of it after, none
// once at or over the quota, and it grows back as the window moves.
func TestQuotaFetchAllowance(t *testing.T) {
	src := &fakeSource{}
	src.set(membership.QuotaEntity{ClientID: named("c")}, membership.QuotaConsumerByteRate, 1000)
	m := New(DefaultConfig(), src)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	a, ok := m.Lookup(Fetch, "u", "c")
	if !ok {
		t.Fatal("no quota for client id c")
	}
	if got := m.Allowance(a); got != 10000 {
		t.Fatalf("before any fetch: allowance %d, want the padded window's 10,000", got)
	}
	if d := m.RecordApplied(a, 6000); d != 0 {
		t.Fatalf("6,000 of 10,000: throttled %v", d)
	}
	if got := m.Allowance(a); got != 4000 {
		t.Fatalf("after 6,000: allowance %d, want 4,000", got)
	}
	if d := m.RecordApplied(a, 4000); d != 0 {
		t.Fatalf("exactly the allowance: throttled %v", d)
	}
	if got := m.Allowance(a); got != 0 {
		t.Fatalf("at the quota: allowance %d, want 0", got)
	}
	// Past the padding the window is the time since its oldest sample:
	// 10.5 s after the first fetch, 10,000 bytes over 10.5 s leave 500.
	now = now.Add(10500 * time.Millisecond)
	if got := m.Allowance(a); got != 500 {
		t.Fatalf("10.5 s on: allowance %d, want 500", got)
	}
	// A reader fetching up to 250 bytes every 100 ms (2.5× the quota),
	// each fetch bounded by its allowance, is never throttled and takes
	// the quota, not less. Kafka's rate lets a window's worth through in
	// bursts (here 10,900 bytes every 11 s, the samples' span), so it is
	// measured over ten spans, once those of its start have aged out.
	var sent int64
	var start time.Time
	for i := 0; i < 1300; i++ {
		if i == 200 {
			sent, start = 0, now
		}
		now = now.Add(100 * time.Millisecond)
		n := min(m.Allowance(a), 250)
		if n == 0 {
			continue // nothing to send: the client waits for the window to move
		}
		if d := m.RecordApplied(a, n); d != 0 {
			t.Fatalf("fetch %d of %d bytes within its allowance: throttled %v", i, n, d)
		}
		sent += n
	}
	if r := float64(sent) / now.Sub(start).Seconds(); r < 970 || r > 1030 {
		t.Errorf("fetching within the allowance took %.0f/s, want about the quota's 1,000", r)
	}
}
