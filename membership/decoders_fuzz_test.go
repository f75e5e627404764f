package membership

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/hashicorp/serf/serf"
)

// Fuzz targets for everything membership decodes from a peer or a file it
// did not write this run: rosters (queries and roster files), catalog
// snapshots (files and anti-entropy pulls), topic events and member tags.
// Each must take any bytes without panicking, and what it accepts must
// survive its own re-encoding.

func FuzzDecodeRoster(f *testing.F) {
	f.Add(encodeRoster([]RosterEntry{{ID: 1, Gen: 3}, {ID: 2, Gen: 1, Decommissioned: true}, {ID: -1, Gen: 0}}))
	f.Add(encodeRoster([]RosterEntry{{ID: 1, Gen: 3, Drain: 6}, {ID: 2, Gen: 1, Decommissioned: true, Drain: 4}}))
	f.Add(encodeRoster(nil))
	f.Add([]byte{})
	f.Add([]byte{1, 0x80})
	f.Fuzz(func(t *testing.T, raw []byte) {
		entries, err := decodeRoster(raw)
		if err != nil {
			return
		}
		again, err := decodeRoster(encodeRoster(entries))
		if err != nil || len(again) != len(entries) {
			t.Fatalf("accepted roster of %d entries does not round-trip: %d, %v", len(entries), len(again), err)
		}
		r := NewRoster()
		r.Merge(entries)
		_ = r.Digest()
	})
}

func catalogSeed() []byte {
	e := TopicEntry{Name: "orders", Partitions: 2, ReplicationFactor: 1, Replicas: [][]int32{{1}, {2}},
		Lamport: 3, Origin: 1, Config: map[string]string{"retention.ms": "1000"}}
	e.ID = deriveTopicID(TopicSpec{Name: e.Name, Partitions: 2, ReplicationFactor: 1}, TopicEntry{})
	raw, _ := json.Marshal(CatalogSnapshot{Clock: 3, Topics: []TopicEntry{e, {Name: "gone", Deleted: true, Lamport: 2, Origin: 2}}})
	return raw
}

func FuzzCatalogSnapshot(f *testing.F) {
	f.Add(catalogSeed())
	f.Add([]byte(`{"clock":1,"topics":[{"name":"x","partitions":-1}]}`))
	f.Add([]byte(`{"topics":[{"name":"x","partitions":1,"replication_factor":1,"replicas":[[]]}]}`))
	f.Add([]byte(`{"clock":2,"topics":[],"acls":[{"resourceType":2,"resourceName":"t","patternType":4,"principal":"User:a","host":"*","operation":3,"permission":3,"lamport":2,"origin":1}]}`))
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":4,"origin":1,"moves":[{"partition":1,"target":[3,4]}]}]}`))
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":4,"origin":1,"moves":[{"partition":1,"target":[3,3]},{"partition":0,"target":[]}]}]}`))
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":4,"origin":1,"pinned":[0,1]}]}`))
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":4,"origin":1,"pinned":[1,1,7]}]}`))
	// Stamped entries (topic_merge.go): one merged with an older unstamped
	// entry of its incarnation, and stamps out of order.
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":3,"replicationFactor":2,"replicas":[[1,2],[2,3],[3,1]],"lamport":6,"origin":2,"born":{"lamport":1,"origin":1},"stamps":[{"from":0,"lamport":1,"origin":1},{"from":1,"lamport":6,"origin":2},{"from":2,"lamport":4,"origin":1}],"moves":[{"partition":1,"target":[3,4]}]},{"name":"m","id":"8a000000000080008000000000000001","partitions":4,"replicationFactor":2,"replicas":[[1,2],[2,3],[3,1],[1,3]],"lamport":4,"origin":1,"born":{"lamport":1,"origin":1},"stamps":[{"from":0,"lamport":1,"origin":1},{"from":2,"lamport":4,"origin":1}],"pinned":[3]}]}`))
	f.Add([]byte(`{"topics":[{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":6,"origin":2,"stamps":[{"from":1,"lamport":6,"origin":2},{"from":0,"lamport":4,"origin":1}]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeCatalogSnapshot(raw)
		if err != nil {
			return
		}
		c := NewCatalog()
		_, _ = c.Merge(s.Topics)
		_, _ = c.MergeUsers(s.Users)
		_, _ = c.MergeACLs(s.ACLs)
		for _, e := range c.ACLs() {
			if err := e.validate(); err != nil {
				t.Fatalf("catalog kept an invalid ACL %+v: %v", e, err)
			}
		}
		for _, e := range c.Entries() {
			if err := e.validate(); err != nil {
				t.Fatalf("catalog kept an invalid entry %q: %v", e.Name, err)
			}
			for p := int32(0); p < e.Partitions; p++ {
				c.partition(e.Name, p)
				_, _ = e.Adding(p), e.Removing(p)
				_ = e.IsPinned(p)
			}
		}
		_ = c.Digest()
	})
}

// stampedSeed is a stamped entry (topic_merge.go): partition 1 altered at
// 6 by broker 2 in an incarnation born at 1 by broker 1.
const stampedSeed = `{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"lamport":6,"origin":2,"born":{"lamport":1,"origin":1},"stamps":[{"from":0,"lamport":1,"origin":1},{"from":1,"lamport":6,"origin":2}]}`

// FuzzTopicEvent is a topic user event's payload, merged as the event loop
// does.
func FuzzTopicEvent(f *testing.F) {
	var s CatalogSnapshot
	_ = json.Unmarshal(catalogSeed(), &s)
	for _, e := range s.Topics {
		raw, _ := json.Marshal(e)
		f.Add(raw)
	}
	f.Add([]byte(stampedSeed))
	f.Add([]byte(`{"name":"m","id":"8a000000000080008000000000000001","partitions":3,"replicationFactor":2,"replicas":[[3,2],[2,3],[1,2]],"lamport":5,"origin":3,"born":{"lamport":1,"origin":1},"stamps":[{"from":0,"lamport":5,"origin":3},{"from":1,"lamport":1,"origin":1}],"moves":[{"partition":2,"target":[3,4]}]}`))
	f.Add([]byte(`{"name":"m","id":"8a000000000080008000000000000001","deleted":true,"lamport":5,"origin":3}`))
	// A config change at 3 by broker 1 that a move at 7 outdates as a
	// version: its configs carry their own stamp (Wide).
	f.Add([]byte(`{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,3],[2,3]],"config":{"retention.ms":"5"},"lamport":7,"origin":1,"born":{"lamport":1,"origin":1},"wide":{"lamport":3,"origin":1},"stamps":[{"from":1,"lamport":1,"origin":1}]}`))
	f.Add([]byte(`{"name":"m","id":"8a000000000080008000000000000001","partitions":2,"replicationFactor":2,"replicas":[[1,2],[2,3]],"config":{"retention.ms":"9"},"lamport":5,"origin":1,"born":{"lamport":1,"origin":1},"stamps":[{"from":0,"lamport":1,"origin":1}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e TopicEntry
		if json.Unmarshal(raw, &e) != nil {
			return
		}
		c := NewCatalog()
		if _, err := c.Merge([]TopicEntry{e}); err == nil && !e.Deleted {
			if got, ok := c.Get(e.Name); !ok || len(got.Replicas) != int(got.Partitions) {
				t.Fatalf("merged entry %q has %d replica lists for %d partitions", e.Name, len(got.Replicas), got.Partitions)
			}
		}
		// Joined with a stamped entry of the same name: what is kept is
		// valid, and merging either again changes nothing.
		var held TopicEntry
		_ = json.Unmarshal([]byte(stampedSeed), &held)
		j := NewCatalog()
		if _, err := j.Merge([]TopicEntry{held}); err != nil {
			t.Fatal(err)
		}
		_, _ = j.Merge([]TopicEntry{e})
		got, _ := j.Get(held.Name)
		if err := got.validate(); err != nil {
			t.Fatalf("join kept an invalid entry: %v", err)
		}
		if ch, _ := j.Merge([]TopicEntry{e, held}); len(ch) != 0 {
			t.Fatalf("merging again changed %+v", ch)
		}
		// And the other order holds the same catalog.
		k := NewCatalog()
		_, _ = k.Merge([]TopicEntry{e})
		_, _ = k.Merge([]TopicEntry{held})
		je, ke := j.Entries(), k.Entries()
		if len(je) != len(ke) {
			t.Fatalf("orders keep %d and %d entries", len(je), len(ke))
		}
		for i := range je {
			if !sameEntry(je[i], ke[i]) {
				t.Fatalf("orders differ:\n%+v\n%+v", je[i], ke[i])
			}
		}
		if j.Digest() != k.Digest() {
			t.Fatal("orders hash differently")
		}
	})
}

// FuzzACLEvent is an ACL user event's payload, merged as the event loop
// does: what is kept is valid, and merging it again changes nothing.
func FuzzACLEvent(f *testing.F) {
	f.Add([]byte(`{"resourceType":4,"resourceName":"kafka-cluster","patternType":3,"principal":"User:*","host":"10.0.0.1","operation":7,"permission":2,"deleted":true,"lamport":9,"origin":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var e ACLEntry
		if json.Unmarshal(raw, &e) != nil {
			return
		}
		c := NewCatalog()
		changed, err := c.MergeACLs([]ACLEntry{e})
		if err != nil {
			return
		}
		if len(changed) != 1 || changed[0].validate() != nil {
			t.Fatalf("merged %+v into %+v", e, changed)
		}
		if again, _ := c.MergeACLs([]ACLEntry{e}); len(again) != 0 {
			t.Fatalf("merging %+v twice changed the catalog twice", e)
		}
	})
}

// FuzzMemberTags is a Serf member's tags as a peer gossips them.
func FuzzMemberTags(f *testing.F) {
	f.Add("3", "127.0.0.1:9092", "127.0.0.1:8080", "r1", "7", "abc", "1700000000/spool-x")
	f.Add("-1", "", "", "", "x", "", "/")
	f.Add("99999999999", "h", "a", "", "18446744073709551616", "", "1/")
	f.Fuzz(func(t *testing.T, id, kafka, admin, rack, gen, rv, cid string) {
		m := serf.Member{Name: "n", Addr: net.IPv4(127, 0, 0, 1), Port: 7946, Status: serf.StatusAlive, Tags: map[string]string{
			TagBrokerID: id, TagKafkaAddr: kafka, TagAdminAddr: admin, TagRack: rack,
			TagGeneration: gen, TagRosterDigest: rv, TagClusterID: cid,
		}}
		got, ok := memberFromSerf(m)
		if ok && got.BrokerID < 0 {
			t.Fatalf("tag %q accepted as broker id %d", id, got.BrokerID)
		}
		if c, err := parseClusterIDTag(cid); err == nil && validateClusterID(c.ID) != nil {
			t.Fatalf("cluster id tag %q accepted with an invalid id", cid)
		}
	})
}

// FuzzTopicIDText is a topic id as text (catalog files, admin API).
func FuzzTopicIDText(f *testing.F) {
	id := deriveTopicID(TopicSpec{Name: "orders", Partitions: 1, ReplicationFactor: 1}, TopicEntry{})
	text, _ := id.MarshalText()
	f.Add(text)
	f.Add([]byte("not-an-id"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var id TopicID
		if id.UnmarshalText(raw) != nil {
			return
		}
		text, _ := id.MarshalText()
		var back TopicID
		if err := back.UnmarshalText(text); err != nil || back != id {
			t.Fatalf("id %x does not round-trip through %q", id, text)
		}
	})
}
