package client

import (
	"encoding/json"
	"testing"

	"github.com/spool-log/spool/membership"
)

// TestTopicIDJSONIsDashed: -o json writes a topic id in the dashed form the
// tables print (as it did when the id was the broker's own type), and it
// reads back.
func TestTopicIDJSONIsDashed(t *testing.T) {
	id := membership.TopicID{0x8a, 1, 2, 3, 4, 5, 0x86, 7, 0x88, 9, 10, 11, 12, 13, 14, 15}
	const want = `{"topic":"t","id":"8a010203-0405-8607-8809-0a0b0c0d0e0f","partitions":3,"replication_factor":1,"internal":false}`
	raw, err := json.Marshal(ListedTopic{Topic: "t", ID: id, Partitions: 3, ReplicationFactor: 1})
	if err != nil || string(raw) != want {
		t.Fatalf("listed topic JSON %s (%v), want %s", raw, err, want)
	}
	var back ListedTopic
	if err := json.Unmarshal(raw, &back); err != nil || back.ID != id {
		t.Fatalf("read back %v (%v), want %v", back.ID, err, id)
	}
	const wantDescribed = `{"topic":"t","id":"8a010203-0405-8607-8809-0a0b0c0d0e0f","partitions":[],"configs":[]}`
	raw, err = json.Marshal(DescribedTopic{Topic: "t", ID: id, Partitions: []DescribedPartition{}, Configs: []DescribedConfig{}})
	if err != nil || string(raw) != wantDescribed {
		t.Fatalf("described topic JSON %s (%v), want %s", raw, err, wantDescribed)
	}
	var d DescribedTopic
	if err := json.Unmarshal(raw, &d); err != nil || d.ID != id {
		t.Fatalf("read back %v (%v), want %v", d.ID, err, id)
	}
}
