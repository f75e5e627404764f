package membership

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

func userQuota(name string) QuotaEntity { return QuotaEntity{User: QuotaNamed(name)} }

// Kafka's entity rules and key/value validation.
func TestQuotaValidate(t *testing.T) {
	ok := []QuotaEntity{
		userQuota("alice"),
		{User: QuotaDefault()},
		{ClientID: QuotaNamed("app")},
		{User: QuotaNamed("alice"), ClientID: QuotaDefault()},
		{User: QuotaDefault(), ClientID: QuotaDefault()},
		{IP: QuotaNamed("10.0.0.1")},
		{IP: QuotaNamed("::1")},
		{IP: QuotaDefault()},
	}
	for _, e := range ok {
		if err := e.Validate(); err != nil {
			t.Errorf("%s: %v", e, err)
		}
	}
	bad := []QuotaEntity{
		{},
		{User: QuotaNamed("")},
		{IP: QuotaNamed("not-an-ip")},
		{IP: QuotaNamed("10.0.0.1"), User: QuotaNamed("alice")},
		{IP: QuotaDefault(), ClientID: QuotaDefault()},
		{User: QuotaName{Set: true, Default: true, Name: "x"}},
		{User: QuotaNamed(strings.Repeat("x", maxQuotaNameLen+1))},
	}
	for _, e := range bad {
		if err := e.Validate(); !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("%+v: %v, want ErrInvalidQuota", e, err)
		}
	}
	u, ip := userQuota("a"), QuotaEntity{IP: QuotaNamed("10.0.0.1")}
	for _, c := range []struct {
		e    QuotaEntity
		key  string
		v    float64
		good bool
	}{
		{u, QuotaProducerByteRate, 1048576, true},
		{u, QuotaConsumerByteRate, 0, true},
		{u, QuotaRequestPercentage, 12.5, true},
		{u, QuotaControllerMutationRate, 0.5, true},
		{u, QuotaProducerByteRate, 1.5, false},
		{u, QuotaProducerByteRate, -1, false},
		{u, QuotaRequestPercentage, math.NaN(), false},
		{u, QuotaConsumerByteRate, math.Inf(1), false},
		{u, "producer.byte.rate", 1, false},
		{u, QuotaConnectionCreationRate, 1, false},
		{ip, QuotaConnectionCreationRate, 10, true},
		{ip, QuotaConnectionCreationRate, 10.5, false},
		{ip, QuotaProducerByteRate, 10, false},
	} {
		err := ValidateQuota(c.e, c.key, c.v)
		if c.good != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidQuota)) {
			t.Errorf("%s %s=%v: %v, want valid %v", c.e, c.key, c.v, err, c.good)
		}
	}
}

// Quota entries merge as ACLs do: per (entity, key) the newest version
// wins whatever the order, and the digest moves with them.
func TestQuotaMergeLastWriterWins(t *testing.T) {
	e := userQuota("alice")
	v1 := QuotaEntry{Entity: e, Key: QuotaProducerByteRate, Value: 100, Lamport: 5, Origin: 1}
	tomb := QuotaEntry{Entity: e, Key: QuotaProducerByteRate, Deleted: true, Lamport: 5, Origin: 1}
	v2 := QuotaEntry{Entity: e, Key: QuotaProducerByteRate, Value: 200, Lamport: 6, Origin: 2}
	other := QuotaEntry{Entity: e, Key: QuotaConsumerByteRate, Value: 300, Lamport: 1, Origin: 3}
	bad := QuotaEntry{Entity: e, Key: "nope", Value: 1, Lamport: 9}
	var digests []uint64
	for _, order := range [][]QuotaEntry{{v1, tomb, v2, other}, {v2, other, tomb, v1}, {other, tomb, v1, v2}} {
		c := NewCatalog()
		empty := c.Digest()
		for _, q := range order {
			if _, err := c.MergeQuotas([]QuotaEntry{q}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.MergeQuotas([]QuotaEntry{bad}); !errors.Is(err, ErrInvalidQuota) {
			t.Errorf("merge of an unknown key: %v, want ErrInvalidQuota", err)
		}
		if got, _ := c.quota(e, QuotaProducerByteRate); got != v2 {
			t.Errorf("order %v: %+v, want %+v", order, got, v2)
		}
		if c.Clock() != 6 || c.Digest() == empty {
			t.Errorf("clock %d (want 6), digest unchanged %v", c.Clock(), c.Digest() == empty)
		}
		digests = append(digests, c.Digest())
	}
	if digests[0] != digests[1] || digests[1] != digests[2] {
		t.Errorf("digests differ by order of arrival: %x", digests)
	}
	c := NewCatalog()
	_, _ = c.MergeQuotas([]QuotaEntry{v1, tomb})
	if got, _ := c.quota(e, QuotaProducerByteRate); !got.Deleted {
		t.Errorf("a tombstone of the same version lost to the live entry: %+v", got)
	}
	// A value change alone moves the digest.
	a, b := NewCatalog(), NewCatalog()
	_, _ = a.MergeQuotas([]QuotaEntry{v1})
	v1b := v1
	v1b.Value = 101
	_, _ = b.MergeQuotas([]QuotaEntry{v1b})
	if a.Digest() == b.Digest() {
		t.Error("two values of one version hash alike")
	}
}

// Quotas survive a save and a load; files from before quotas load.
func TestQuotaCatalogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), catalogFile)
	if err := os.WriteFile(path, []byte(`{"clock":3,"topics":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := loadCatalog(path)
	if err != nil || len(c.Quotas()) != 0 {
		t.Fatalf("load a catalog from before quotas: %v %v", err, c.Quotas())
	}
	if _, err := c.MergeQuotas([]QuotaEntry{
		{Entity: QuotaEntity{User: QuotaDefault(), ClientID: QuotaNamed("app")}, Key: QuotaProducerByteRate, Value: 1024, Lamport: 4, Origin: 1},
		{Entity: QuotaEntity{IP: QuotaNamed("10.1.2.3")}, Key: QuotaConnectionCreationRate, Deleted: true, Lamport: 5, Origin: 2}}); err != nil {
		t.Fatal(err)
	}
	if err := saveCatalog(path, c); err != nil {
		t.Fatal(err)
	}
	back, err := loadCatalog(path)
	if err != nil || back.Digest() != c.Digest() || len(back.Quotas()) != 2 {
		t.Fatalf("reloaded: %v %+v", err, back.Quotas())
	}
}

func liveQuotas(a *Agent) string {
	var s []string
	for _, e := range a.Quotas() {
		s = append(s, fmt.Sprintf("%s/%s=%v", e.Entity, e.Key, e.Value))
	}
	return strings.Join(s, " ")
}

// Quotas altered on one node reach every node by gossip, removals made on
// another too, an entry no event carried spreads by anti-entropy, and a
// node's file keeps them.
func TestQuotasSpreadAndPersist(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	gen := c.QuotasGeneration()
	alice := userQuota("alice")
	if err := a.AlterQuotas([]QuotaChange{
		{Entity: alice, Key: QuotaProducerByteRate, Value: 1048576},
		{Entity: alice, Key: QuotaConsumerByteRate, Value: 2097152},
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.AlterQuotas([]QuotaChange{{Entity: alice, Key: "bogus", Value: 1}}); !errors.Is(err, ErrInvalidQuota) {
		t.Fatalf("alter an unknown key: %v, want ErrInvalidQuota", err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if got := liveQuotas(c.Agent); got != "user=alice/consumer_byte_rate=2.097152e+06 user=alice/producer_byte_rate=1.048576e+06" {
			return fmt.Errorf("node 3 quotas %q", got)
		}
		return nil
	})
	if c.QuotasGeneration() == gen {
		t.Error("node 3's quota generation did not move")
	}
	if err := b.AlterQuotas([]QuotaChange{{Entity: alice, Key: QuotaConsumerByteRate, Remove: true},
		{Entity: userQuota("nobody"), Key: QuotaConsumerByteRate, Remove: true}}); err != nil {
		t.Fatal(err)
	}
	quiet := QuotaEntry{Entity: QuotaEntity{ClientID: QuotaDefault()}, Key: QuotaRequestPercentage, Value: 50, Lamport: a.catalog.tick(), Origin: 1}
	if err := mergeEntries(a.Agent, a.quotas, []QuotaEntry{quiet}, "local"); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if got := liveQuotas(n.Agent); got != "client-id=<default>/request_percentage=50 user=alice/producer_byte_rate=1.048576e+06" {
				return fmt.Errorf("%s quotas %q", n.cfg.NodeName, got)
			}
		}
		return sameCatalog(nodes...)()
	})
	c.stop()
	back, err := loadCatalog(c.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.quota(alice, QuotaConsumerByteRate); !ok || !e.Deleted {
		t.Errorf("node 3's file: alice's consumer_byte_rate %+v, want its tombstone", e)
	}
	if e, ok := back.quota(alice, QuotaProducerByteRate); !ok || e.Deleted || e.Value != 1048576 {
		t.Errorf("node 3's file: alice's producer_byte_rate %+v", e)
	}
}
