package membership

import (
	"fmt"
	"strconv"
	"strings"
)

// Tag keys gossiped by every Spool node. Together they stay well under
// memberlist's 512-byte metadata limit; Create refuses a config whose tags
// would not fit.
const (
	TagBrokerID     = "id"
	TagKafkaAddr    = "kafka"
	TagAdminAddr    = "admin"
	TagRack         = "rack"
	TagGeneration   = "gen"
	TagRosterDigest = "rv"
	TagClusterID    = "cid" // "<born unix ns>/<id>": this node's view of the cluster id
	TagLeadership   = "lv"  // "<incarnation>.<version>" of the partitions this node leads (node/leadership)
	// TagRaft is the advertised host:port of the Raft transport
	// (node/replica/transport), set when Config.RaftAddr is. It costs up
	// to ~70 bytes of the 512-byte budget.
	TagRaft = "raft"
	// TagListenerPrefix starts one tag per named Kafka listener:
	// "l.<NAME>" = its advertised host:port. Metadata tells a client that
	// came in on listener NAME each broker's NAME address. A node without
	// any such tag (older than named listeners) has only "kafka", which
	// then answers for every listener.
	TagListenerPrefix = "l."
)

// maxLeadershipTagBytes is the most the "lv" tag's value takes; it is set
// after start (SetLeadershipTag), so its room is kept from the outset.
const maxLeadershipTagBytes = 27

// maxTagBytes is memberlist's MetaMaxSize; serf msgpack-encodes the tag map
// into it with a few bytes of framing per string.
const maxTagBytes = 512

func buildTags(c *Config, gen uint64, rosterDigest, clusterIDTag string) (map[string]string, error) {
	tags := map[string]string{
		TagClusterID:    clusterIDTag,
		TagBrokerID:     strconv.FormatInt(int64(c.BrokerID), 10),
		TagKafkaAddr:    c.KafkaAddr,
		TagAdminAddr:    c.AdminAddr,
		TagRack:         c.Rack,
		TagGeneration:   strconv.FormatUint(gen, 10),
		TagRosterDigest: rosterDigest,
	}
	if c.RaftAddr != "" {
		tags[TagRaft] = c.RaftAddr
	}
	if f, ok := featuresTag(c); ok {
		tags[TagFeatures] = f
	}
	for name, addr := range c.Listeners {
		tags[TagListenerPrefix+name] = addr
	}
	// Serf's encoding: 1 magic byte, then the map in msgpack (the
	// original spec serf's codec writes: a string of under 32 bytes has a
	// 1-byte header, of under 64 KiB a 3-byte one), the tags set after
	// start at their largest.
	size := 1 + msgpackMapHeader(len(tags)+2) +
		msgpackStr(len(TagLeadership)) + msgpackStr(maxLeadershipTagBytes) +
		msgpackStr(len(TagServing)) + msgpackStr(maxServingTagBytes)
	for k, v := range tags {
		size += msgpackStr(len(k)) + msgpackStr(len(v))
	}
	if size > maxTagBytes {
		return nil, fmt.Errorf("member tags need up to %d bytes, over the %d-byte gossip limit (shorten the advertised addresses or rack)", size, maxTagBytes)
	}
	return tags, nil
}

// parseBrokerID reads the "id" tag.
func parseBrokerID(tags map[string]string) (int32, error) {
	raw, ok := tags[TagBrokerID]
	if !ok {
		return 0, fmt.Errorf("no %q tag", TagBrokerID)
	}
	id, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("bad %q tag %q", TagBrokerID, raw)
	}
	return int32(id), nil
}

// parseListeners reads the "l.<NAME>" tags; nil when there are none.
func parseListeners(tags map[string]string) map[string]string {
	var out map[string]string
	for k, v := range tags {
		if name, ok := strings.CutPrefix(k, TagListenerPrefix); ok && name != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}

// msgpackStr is the encoded size of an n-byte string in the original
// msgpack spec (fixraw, raw16, raw32).
func msgpackStr(n int) int {
	switch {
	case n < 32:
		return 1 + n
	case n < 1<<16:
		return 3 + n
	}
	return 5 + n
}

// msgpackMapHeader is the encoded size of a map header of n entries.
func msgpackMapHeader(n int) int {
	if n < 16 {
		return 1
	}
	return 3
}
