package membership

import (
	"encoding/base64"
	"strings"
	"testing"
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
