package membership

import "testing"

// TestListenerTags: listener addresses travel as "l.<NAME>" tags, and a
// member without them (a node older than named listeners) answers every
// listener with its "kafka" address.
func TestListenerTags(t *testing.T) {
	c := &Config{BrokerID: 1, KafkaAddr: "10.0.0.1:9092", Listeners: map[string]string{"INTERNAL": "10.0.0.1:9092", "EXTERNAL": "kafka.example.com:9093"}}
	tags, err := buildTags(c, 1, "rv", "cid")
	if err != nil {
		t.Fatal(err)
	}
	if tags["l.EXTERNAL"] != "kafka.example.com:9093" || tags[TagKafkaAddr] != "10.0.0.1:9092" {
		t.Fatalf("tags %v", tags)
	}
	m := Member{KafkaAddr: tags[TagKafkaAddr], Listeners: parseListeners(tags)}
	if addr, ok := m.ListenerAddr("EXTERNAL"); !ok || addr != "kafka.example.com:9093" {
		t.Fatalf("EXTERNAL: %q %v", addr, ok)
	}
	if _, ok := m.ListenerAddr("OTHER"); ok {
		t.Fatal("a listener the member lacks has an address")
	}
	old := Member{KafkaAddr: "10.0.0.2:9092", Listeners: parseListeners(map[string]string{TagKafkaAddr: "10.0.0.2:9092"})}
	if addr, ok := old.ListenerAddr("EXTERNAL"); !ok || addr != "10.0.0.2:9092" {
		t.Fatalf("older member: %q %v", addr, ok)
	}
}
