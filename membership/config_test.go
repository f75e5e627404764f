package membership

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

func TestTagsStayUnderGossipLimit(t *testing.T) {
	c := DefaultConfig()
	c.KafkaAddr = "broker-17.kafka.prod.example.internal:9092"
	c.AdminAddr = "broker-17.kafka.prod.example.internal:9644"
	c.Rack = "eu-west-1a"
	cid := clusterID{ID: "spool-" + strings.Repeat("f", 32), Born: 1 << 62}
	tags, err := buildTags(c, 1<<40, strings.Repeat("f", 16), cid.tag())
	if err != nil {
		t.Fatalf("ordinary tags refused: %v", err)
	}
	if tags[TagBrokerID] != "0" || tags[TagGeneration] != "1099511627776" {
		t.Fatalf("tags %v", tags)
	}
	c.Rack = strings.Repeat("r", 400)
	if _, err := buildTags(c, 1, "0", cid.tag()); err == nil {
		t.Fatal("tags over 512 bytes accepted")
	}
}

func TestDecodeGossipKey(t *testing.T) {
	key := make([]byte, 32)
	if got, err := DecodeGossipKey(base64.StdEncoding.EncodeToString(key)); err != nil || len(got) != 32 {
		t.Fatalf("valid key: %v", err)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString(key[:16])} {
		if _, err := DecodeGossipKey(bad); err == nil {
			t.Errorf("DecodeGossipKey(%q) accepted", bad)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	c := DefaultConfig()
	c.BrokerID = -1
	c.GossipKey = []byte("short")
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "broker id") || !strings.Contains(err.Error(), "gossip key") {
		t.Fatalf("validate: %v", err)
	}
	if err := c.UseTimings("wan-ish"); err == nil {
		t.Fatal("unknown timing profile accepted")
	}
}

// The tag budget is an upper bound of what serf really encodes (the map
// in msgpack behind its magic byte), with the tags set after start at
// their largest, and not a loose one: a node with several listeners and
// long addresses still starts.
func TestTagBudgetBoundsSerfsEncoding(t *testing.T) {
	c := DefaultConfig()
	c.KafkaAddr = "broker-17.kafka.prod.example.internal:9092"
	c.AdminAddr = "broker-17.kafka.prod.example.internal:9644"
	c.RaftAddr = "broker-17.kafka.prod.example.internal:9093"
	c.Rack = "eu-west-1a"
	c.Listeners = map[string]string{"INTERNAL": "127.0.0.1:40001", "MTLS": "127.0.0.1:40002", "SASL": "127.0.0.1:40003"}
	cid := clusterID{ID: "spool-" + strings.Repeat("f", 32), Born: 1 << 62}
	tags, err := buildTags(c, 1<<40, strings.Repeat("f", 16), cid.tag())
	if err != nil {
		t.Fatalf("tags of a node with three listeners refused: %v", err)
	}
	tags[TagLeadership] = strings.Repeat("9", maxLeadershipTagBytes)
	tags[TagServing] = strings.Repeat("9", maxServingTagBytes)
	var buf bytes.Buffer
	buf.WriteByte(0xff) // serf's magic byte
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(tags); err != nil {
		t.Fatal(err)
	}
	delete(tags, TagLeadership)
	delete(tags, TagServing)
	want := 1 + msgpackMapHeader(len(tags)+2) + msgpackStr(len(TagLeadership)) + msgpackStr(maxLeadershipTagBytes) +
		msgpackStr(len(TagServing)) + msgpackStr(maxServingTagBytes)
	for k, v := range tags {
		want += msgpackStr(len(k)) + msgpackStr(len(v))
	}
	if buf.Len() > want {
		t.Fatalf("serf encodes %d bytes, over the budget's %d", buf.Len(), want)
	}
	if buf.Len() < want-4 {
		t.Fatalf("serf encodes %d bytes, the budget counts %d: a loose bound refuses nodes that fit", buf.Len(), want)
	}
}
