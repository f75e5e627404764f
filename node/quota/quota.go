// Package quota enforces client quotas on one broker as Kafka's quota
// managers do (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599, KIP-612): each
// (user, client-id) finds the quota that applies to it by Kafka's
// precedence; the bytes it sends (produce) or is sent (fetch), and the
// time its requests take, are recorded in a rate over a sliding window of
// samples, and a request that takes the rate past the quota is answered
// with a throttle time the caller mutes the connection for. Partition
// mutations go through a token bucket (Mutation), connections per ip
// through a rate of their own (AdmitConnection).
//
// Precedence, most specific first (each "default" applies to every user
// or client id on its own, not to all of them together):
//
//	user+client-id, user+default client-id, user,
//	default user+client-id, default user+default client-id, default user,
//	client-id, default client-id
//
// The rate is Kafka's: samples of Config.SampleWindow (a new one starts
// when the newest is that old), the oldest dropped past Config.Samples of
// them; the rate is their sum over the time since the oldest began,
// padded to at least Samples-1 windows, so a new client cannot be
// throttled by its first request (and may send up to Samples-1 windows'
// worth of its quota at once). On a violation the throttle is
// (rate-quota)/quota × window, at most Config.MaxThrottle.
//
// Locks: Manager.mu guards the sensors; it is held only for a map lookup
// and an arithmetic update, never across a call out.
package quota

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spool-log/spool/membership"
)

// Kind is what a rate counts.
type Kind int

const (
	Produce    Kind = iota // bytes produced: producer_byte_rate
	Fetch                  // bytes fetched: consumer_byte_rate
	Mutation               // partitions created or deleted: controller_mutation_rate (a token bucket)
	Connection             // connections accepted from an ip: connection_creation_rate
	Request                // request handling time, in nanoseconds: request_percentage
	numKinds
)

func (k Kind) key() string {
	switch k {
	case Produce:
		return membership.QuotaProducerByteRate
	case Fetch:
		return membership.QuotaConsumerByteRate
	case Connection:
		return membership.QuotaConnectionCreationRate
	case Request:
		return membership.QuotaRequestPercentage
	}
	return membership.QuotaControllerMutationRate
}

// Config is Kafka's quota.window.num and quota.window.size.seconds.
type Config struct {
	Samples      int
	SampleWindow time.Duration
	// MaxThrottle bounds one byte-rate or request-time throttle; 0 is
	// one sample window (Kafka's bound).
	MaxThrottle time.Duration
}

// DefaultConfig is Kafka's: 11 samples of 1 s.
func DefaultConfig() Config {
	return Config{Samples: 11, SampleWindow: time.Second}
}

// Source is where the quotas come from: the membership catalog.
type Source interface {
	Quotas() []membership.QuotaEntry
	QuotasGeneration() uint64
}

// table is the quotas of one catalog generation, by entity and kind.
type table struct {
	gen uint64
	by  map[membership.QuotaEntity]values
	has [numKinds]bool // any quota of the kind at all
	// shapes has bit i set, per kind, when a quota of the kind is set on
	// an entity of the shape of Lookup's candidate i (user and client id,
	// user alone, default client id, ...): a lookup asks the map only for
	// the shapes some quota has, so a client of a cluster with 1,000
	// users' quotas costs one map lookup, not eight.
	shapes [numKinds]uint8
}

// values is one entity's quotas, by kind.
type values struct {
	v   [numKinds]float64
	set [numKinds]bool
}

// shapeOf is the index of e's shape among Lookup's candidates, -1 for an
// ip entity.
func shapeOf(e membership.QuotaEntity) int {
	if e.IP.Set {
		return -1
	}
	u := 2 // none
	switch {
	case e.User.Set && e.User.Default:
		u = 1
	case e.User.Set:
		u = 0
	}
	c := 2
	switch {
	case e.ClientID.Set && e.ClientID.Default:
		c = 1
	case e.ClientID.Set:
		c = 0
	}
	if u == 2 {
		if c == 2 {
			return -1
		}
		return 6 + c
	}
	return u*3 + c
}

// Manager records rates and decides throttles. Safe for concurrent use.
type Manager struct {
	cfg   Config
	src   Source
	now   func() time.Time
	table atomic.Pointer[table]
	tmu   sync.Mutex // serializes table rebuilds

	mu        sync.Mutex
	sensors   map[sensorKey]*rate
	buckets   map[sensorKey]*bucket
	lastSweep time.Time
}

// New returns a manager over src's quotas.
func New(cfg Config, src Source) *Manager {
	if cfg.Samples < 2 {
		cfg.Samples = 2
	}
	if cfg.SampleWindow <= 0 {
		cfg.SampleWindow = time.Second
	}
	if cfg.MaxThrottle <= 0 {
		cfg.MaxThrottle = cfg.SampleWindow
	}
	m := &Manager{cfg: cfg, src: src, now: time.Now, sensors: map[sensorKey]*rate{}, buckets: map[sensorKey]*bucket{}}
	m.table.Store(&table{gen: ^uint64(0)})
	return m
}

// current is the table of src's generation, rebuilt when it moved.
func (m *Manager) current() *table {
	t := m.table.Load()
	if m.src == nil {
		return t
	}
	gen := m.src.QuotasGeneration()
	if t.gen == gen {
		return t
	}
	m.tmu.Lock()
	defer m.tmu.Unlock()
	if t = m.table.Load(); t.gen == gen {
		return t
	}
	t = &table{gen: gen, by: map[membership.QuotaEntity]values{}}
	for _, q := range m.src.Quotas() {
		q.Entity.IP = canonicalIP(q.Entity.IP)
		for k := Kind(0); k < numKinds; k++ {
			if q.Key == k.key() {
				v := t.by[q.Entity]
				v.v[k], v.set[k] = q.Value, true
				t.by[q.Entity] = v
				t.has[k] = true
				if i := shapeOf(q.Entity); i >= 0 {
					t.shapes[k] |= 1 << i
				}
			}
		}
	}
	m.table.Store(t)
	return t
}

// Active tells whether any quota of kind is set: one atomic load when the
// catalog has not changed, so the request path asks it first.
func (m *Manager) Active(kind Kind) bool { return m.current().has[kind] }

// sensorKey is who shares a rate: the user and client id at the levels
// of the quota that applies (Kafka's metric tags), and the kind.
type sensorKey struct {
	user, clientID string
	ip             string
	kind           Kind
}

// Applied is the quota that applies to a client: the entity it is set on,
// its value, and the rate it is counted in.
type Applied struct {
	Entity membership.QuotaEntity
	Limit  float64
	key    sensorKey
}

// Lookup finds the quota of kind for user and clientID by Kafka's
// precedence; ok is false when none applies.
func (m *Manager) Lookup(kind Kind, user, clientID string) (Applied, bool) {
	return m.lookupIn(m.current(), kind, user, clientID)
}

// Cache is one connection's memory of what Lookup found for its client:
// a connection's requests come from one client, one at a time, so most
// of them need no lookup at all, only a check that neither the catalog's
// generation nor the client's names moved. Not safe for concurrent use;
// the zero value is empty.
type Cache struct {
	gen            uint64
	user, clientID string
	have, ok       [numKinds]bool
	found          [numKinds]Applied
}

// LookupCached is Lookup through c (nil: no cache).
func (m *Manager) LookupCached(c *Cache, kind Kind, user, clientID string) (Applied, bool) {
	t := m.current()
	if c == nil {
		return m.lookupIn(t, kind, user, clientID)
	}
	if c.gen != t.gen || c.user != user || c.clientID != clientID {
		*c = Cache{gen: t.gen, user: user, clientID: clientID}
	}
	if !c.have[kind] {
		c.found[kind], c.ok[kind] = m.lookupIn(t, kind, user, clientID)
		c.have[kind] = true
	}
	return c.found[kind], c.ok[kind]
}

func (m *Manager) lookupIn(t *table, kind Kind, user, clientID string) (Applied, bool) {
	if !t.has[kind] {
		return Applied{}, false
	}
	u, du := membership.QuotaNamed(user), membership.QuotaDefault()
	c, dc := membership.QuotaNamed(clientID), membership.QuotaDefault()
	none := membership.QuotaName{}
	for i, cand := range [...]struct {
		e          membership.QuotaEntity
		user, clnt bool // which of the names the rate is kept per
	}{
		{membership.QuotaEntity{User: u, ClientID: c}, true, true},
		{membership.QuotaEntity{User: u, ClientID: dc}, true, true},
		{membership.QuotaEntity{User: u, ClientID: none}, true, false},
		{membership.QuotaEntity{User: du, ClientID: c}, true, true},
		{membership.QuotaEntity{User: du, ClientID: dc}, true, true},
		{membership.QuotaEntity{User: du, ClientID: none}, true, false},
		{membership.QuotaEntity{User: none, ClientID: c}, false, true},
		{membership.QuotaEntity{User: none, ClientID: dc}, false, true},
	} {
		if t.shapes[kind]&(1<<i) == 0 {
			continue
		}
		vals, ok := t.by[cand.e]
		if !ok || !vals.set[kind] {
			continue
		}
		k := sensorKey{kind: kind}
		if cand.user {
			k.user = user
		}
		if cand.clnt {
			k.clientID = clientID
		}
		limit := vals.v[kind]
		if kind == Request {
			// A percentage of one thread: nanoseconds of handling per
			// second.
			limit *= float64(time.Second) / 100
		}
		return Applied{Entity: cand.e, Limit: limit, key: k}, true
	}
	return Applied{}, false
}

// LookupIP finds the connection_creation_rate of ip: its own, else the
// default ip's (which applies to every address on its own).
func (m *Manager) LookupIP(ip string) (Applied, bool) {
	t := m.current()
	if !t.has[Connection] {
		return Applied{}, false
	}
	ip = canonicalIP(membership.QuotaNamed(ip)).Name
	for _, e := range [...]membership.QuotaEntity{{IP: membership.QuotaNamed(ip)}, {IP: membership.QuotaDefault()}} {
		if vals := t.by[e]; vals.set[Connection] {
			return Applied{Entity: e, Limit: vals.v[Connection], key: sensorKey{ip: ip, kind: Connection}}, true
		}
	}
	return Applied{}, false
}

// canonicalIP writes an ip entity's address one way (an IPv4 address
// mapped into IPv6 as IPv4), so a quota on 10.0.0.1 applies to a client
// seen as ::ffff:10.0.0.1.
func canonicalIP(n membership.QuotaName) membership.QuotaName {
	if !n.Set || n.Default {
		return n
	}
	if a, err := netip.ParseAddr(n.Name); err == nil {
		n.Name = a.Unmap().String()
	}
	return n
}

// AdmitConnection counts a new connection from ip and returns 0 to take
// it, or how long to hold it before closing it unserved when it takes ip
// past its connection_creation_rate; a refused connection is not
// counted (Kafka's per-IP connection quota, KIP-612).
func (m *Manager) AdmitConnection(ip string) time.Duration {
	a, ok := m.LookupIP(ip)
	if !ok {
		return 0
	}
	d := m.RecordApplied(a, 1)
	if d > 0 {
		m.Unrecord(a, 1)
	}
	return d
}

// Record counts n bytes of kind for user and clientID and returns how
// long to throttle the client for: 0 when no quota applies or the rate
// stays within it.
func (m *Manager) Record(kind Kind, user, clientID string, n int64) time.Duration {
	a, ok := m.Lookup(kind, user, clientID)
	if !ok {
		return 0
	}
	return m.RecordApplied(a, n)
}

// RecordApplied is Record for a quota Lookup found.
func (m *Manager) RecordApplied(a Applied, n int64) time.Duration {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	r := m.sensors[a.key]
	if r == nil {
		r = newRate(m.cfg, now)
		m.sensors[a.key] = r
	}
	// One pass over the samples for the purge and one for the sum: this
	// runs on every request of a client under a quota.
	r.purge(now)
	r.add(float64(n), now)
	r.bytes += n
	sum, window := r.sumAndWindow(now)
	v := sum / window.Seconds()
	if v <= a.Limit {
		return 0
	}
	// Kafka's QuotaUtils.throttleTime: how long the window must go on
	// without traffic for the rate to come back to the quota.
	var d time.Duration
	if a.Limit <= 0 {
		d = m.cfg.MaxThrottle
	} else {
		d = time.Duration((v - a.Limit) / a.Limit * float64(window))
	}
	d = min(d, m.cfg.MaxThrottle)
	r.throttled++
	r.throttleTime += d
	return d
}

// RecordNoThrottle counts n of kind for user and clientID without
// deciding a throttle (Kafka's recordNoThrottle, for the network threads'
// time of a request already answered): the client's next request finds
// its rate the higher for it.
func (m *Manager) RecordNoThrottle(kind Kind, user, clientID string, n int64) {
	a, ok := m.Lookup(kind, user, clientID)
	if !ok {
		return
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.sensors[a.key]
	if r == nil {
		r = newRate(m.cfg, now)
		m.sensors[a.key] = r
	}
	r.record(float64(n), now)
	r.bytes += n
}

// Unrecord takes back n bytes recorded (a fetch answered empty because it
// was throttled sends none of them).
func (m *Manager) Unrecord(a Applied, n int64) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.sensors[a.key]; r != nil {
		r.record(-float64(n), now)
		r.bytes -= n
	}
}

// Total is what one rate counted since it was made (a rate idle for a
// whole window is dropped, and counts again from nothing).
type Total struct {
	Kind             Kind
	User, ClientID   string // the names the rate is kept per ("" when not)
	IP               string // a connection rate's address
	Bytes, Throttled int64  // Bytes: connections, for a connection rate
	ThrottleTime     time.Duration
}

// Totals lists every rate's totals.
func (m *Manager) Totals() []Total {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Total, 0, len(m.sensors))
	for k, r := range m.sensors {
		out = append(out, Total{Kind: k.kind, User: k.user, ClientID: k.clientID, IP: k.ip,
			Bytes: r.bytes, Throttled: r.throttled, ThrottleTime: r.throttleTime})
	}
	return out
}

// MaxBytes is how many bytes a's rate may take in one window before it is
// past the quota (Kafka's getMaxValueInQuotaWindow): a fetch is bounded by
// it so one response cannot overshoot by much.
func (m *Manager) MaxBytes(a Applied) int64 {
	w := float64(m.cfg.Samples-1) * m.cfg.SampleWindow.Seconds()
	return int64(a.Limit * w)
}

// Allowance is how many bytes a's rate may take now and stay within the
// quota: MaxBytes for a client with no rate yet, nothing when it is at or
// past it. A fetch bounded by it is answered with what the quota lets
// through rather than with more, thrown away (a throttled fetch is
// answered empty), which held a consumer reading a backlog to 0.84× its
// quota on 100 ms samples with 256 KiB partition fetches; bounded, the
// only fetches thrown away are those whose first batch is larger than
// what is left (a fetch always carries its first batch, KIP-74).
func (m *Manager) Allowance(a Applied) int64 {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.sensors[a.key]
	if r == nil {
		return m.MaxBytes(a)
	}
	r.purge(now)
	sum, window := r.sumAndWindow(now)
	return max(0, int64(a.Limit*window.Seconds()-sum))
}

// sweep drops the rates idle for a whole window, at most once a window.
func (m *Manager) sweep(now time.Time) {
	span := time.Duration(m.cfg.Samples) * m.cfg.SampleWindow
	if now.Sub(m.lastSweep) < span {
		return
	}
	m.lastSweep = now
	for k, r := range m.sensors {
		if now.Sub(r.last) > span {
			delete(m.sensors, k)
		}
	}
	for k, b := range m.buckets {
		if b.full(now) {
			delete(m.buckets, k) // a new one starts full too
		}
	}
}

// Mutations (KIP-599) are counted in a token bucket, as Kafka's
// controller mutation quota: it holds up to quota × Samples × SampleWindow
// mutations, refills at the quota, starts full, and may go below zero by
// the last request it let through. A strict request (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+) has each topic refused while
// the bucket is below zero; an older one is let through and throttled.
type bucket struct {
	limit, burst float64
	tokens       float64
	at           time.Time
}

func (b *bucket) refill(now time.Time) {
	b.tokens = min(b.burst, b.tokens+b.limit*now.Sub(b.at).Seconds())
	b.at = now
}

func (b *bucket) full(now time.Time) bool {
	return b.tokens+b.limit*now.Sub(b.at).Seconds() >= b.burst
}

func (m *Manager) bucketOf(a Applied, now time.Time) *bucket {
	burst := a.Limit * float64(m.cfg.Samples) * m.cfg.SampleWindow.Seconds()
	b := m.buckets[a.key]
	if b == nil {
		b = &bucket{tokens: burst, at: now}
		m.buckets[a.key] = b
	}
	b.limit, b.burst = a.Limit, burst
	b.refill(now)
	return b
}

// MutationsExceeded tells whether a's bucket is below zero: a strict
// request's next topic is refused (THROTTLING_QUOTA_EXCEEDED).
func (m *Manager) MutationsExceeded(a Applied) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bucketOf(a, now).tokens < 0
}

// RecordMutations takes n mutations from a's bucket.
func (m *Manager) RecordMutations(a Applied, n int) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	m.bucketOf(a, now).tokens -= float64(n)
}

// MutationThrottle is how long until a's bucket is back at zero (Kafka's
// throttle for a mutation quota, not bounded by MaxThrottle).
func (m *Manager) MutationThrottle(a Applied) time.Duration {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketOf(a, now)
	if b.tokens >= 0 {
		return 0
	}
	if a.Limit <= 0 {
		return m.cfg.MaxThrottle
	}
	return time.Duration(-b.tokens / a.Limit * float64(time.Second))
}

// rate is Kafka's Rate over a SampledStat: samples, each with its start
// and total.
type rate struct {
	cfg     Config
	samples []sample
	cur     int
	last    time.Time // the last record
	// sum is the samples' total and oldest their earliest start, kept as
	// they change: a record passes over the samples only when it starts
	// one or one is due for a purge (once a sample window, at most), not
	// on every request.
	sum    float64
	oldest time.Time
	// totals since the rate was made, for Totals.
	bytes, throttled int64
	throttleTime     time.Duration
}

type sample struct {
	start time.Time
	total float64
}

func newRate(cfg Config, now time.Time) *rate {
	r := &rate{cfg: cfg, samples: make([]sample, cfg.Samples), oldest: now}
	for i := range r.samples {
		r.samples[i].start = now
	}
	return r
}

func (r *rate) record(v float64, now time.Time) {
	r.purge(now)
	r.add(v, now)
}

// add is record on samples already purged.
func (r *rate) add(v float64, now time.Time) {
	if now.Sub(r.samples[r.cur].start) >= r.cfg.SampleWindow {
		r.cur = (r.cur + 1) % len(r.samples)
		r.samples[r.cur] = sample{start: now}
		r.rescan()
	}
	r.samples[r.cur].total += v
	r.sum += v
	r.last = now
}

// purge resets the samples that began more than a whole window ago.
func (r *rate) purge(now time.Time) {
	span := time.Duration(len(r.samples)) * r.cfg.SampleWindow
	if now.Sub(r.oldest) < span {
		return // none is due
	}
	for i := range r.samples {
		if now.Sub(r.samples[i].start) >= span {
			r.samples[i] = sample{start: now}
		}
	}
	r.rescan()
}

// rescan sets sum and oldest from the samples (afresh, so that adding
// and taking back bytes does not drift the sum).
func (r *rate) rescan() {
	r.sum, r.oldest = 0, r.samples[0].start
	for _, s := range r.samples {
		r.sum += s.total
		if s.start.Before(r.oldest) {
			r.oldest = s.start
		}
	}
}

// sumAndWindow is the samples' total and Kafka's Rate.windowSize (the
// time since the oldest sample began, padded by the whole sample windows
// it falls short of Samples-1), of samples already purged.
func (r *rate) sumAndWindow(now time.Time) (float64, time.Duration) {
	elapsed := max(now.Sub(r.oldest), 0)
	full, minFull := int(elapsed/r.cfg.SampleWindow), len(r.samples)-1
	if full < minFull {
		elapsed += time.Duration(minFull-full) * r.cfg.SampleWindow
	}
	return r.sum, elapsed
}
