package leadership

import "testing"

// tenThousand is 10,000 claims of three replicas over 100 topics.
func tenThousand(leader int32, epoch int32) []Claim {
	var out []Claim
	for t := range 100 {
		out = append(out, claims(leader, byte(t), 100, epoch)...)
	}
	return out
}

// BenchmarkLocalSetUnchanged is the publisher's cost per scan when nothing
// changed, for a node leading 10,000 partitions.
func BenchmarkLocalSetUnchanged(b *testing.B) {
	l := NewLocal(1)
	cs := tenThousand(1, 3)
	l.Set(cs)
	b.ReportAllocs()
	for b.Loop() {
		if l.Set(cs) {
			b.Fatal("changed")
		}
	}
}

// BenchmarkFullMessage encodes and decodes a full pull of 10,000 claims.
func BenchmarkFullMessage(b *testing.B) {
	l := NewLocal(1)
	l.Set(tenThousand(1, 3))
	var size int
	for b.Loop() {
		raw := Encode(l.Message(0, 0))
		if _, err := Decode(raw); err != nil {
			b.Fatal(err)
		}
		size = len(raw)
	}
	b.ReportMetric(float64(size), "bytes/msg")
}

// BenchmarkLookup is Metadata's per-partition cost with three brokers'
// claims in the table.
func BenchmarkLookup(b *testing.B) {
	tab := NewTable()
	for id := int32(1); id <= 3; id++ {
		if err := tab.Apply(id, Message{Broker: id, Inc: 1, Version: 1, Full: true, Claims: tenThousand(id, id)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := tab.Lookup(topicID(byte(i%100)), int32(i%100)); !ok {
			b.Fatal("no claim")
		}
		i++
	}
}
