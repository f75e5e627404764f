package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRecordSeeds are the records the coordinator writes: a commit, a
// commit tombstone, group metadata with a member, and its tombstone.
func groupRecordSeeds() []record {
	meta := kmsg.GroupMetadataValue{Version: groupMetadataValueVer, ProtocolType: "consumer", Generation: 3,
		Protocol: kmsg.StringPtr("range"), Leader: kmsg.StringPtr("m1"),
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m1", ClientID: "c", ClientHost: "/127.0.0.1",
			RebalanceTimeoutMillis: 1000, SessionTimeoutMillis: 1000, Subscription: []byte{1}, Assignment: []byte{2}}}}
	return []record{
		{key: offsetCommitKey("g", "orders", 3), value: offsetCommitValue(commit{offset: 42, leaderEpoch: 0, metadata: "m", timestamp: 1})},
		{key: offsetCommitKey("g", "orders", 4)},
		{key: groupMetadataKey("g"), value: meta.AppendTo(nil)},
		{key: groupMetadataKey("h")},
	}
}

// FuzzDecodeBatches: the __consumer_offsets batch walk takes any bytes
// without panicking.
func FuzzDecodeBatches(f *testing.F) {
	f.Add(encodeBatch(groupRecordSeeds(), 1234))
	f.Add(encodeBatch(nil, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = decodeBatches(b, func(r record) error {
			if len(r.key) > len(b) || len(r.value) > len(b) {
				t.Fatalf("record of %d+%d bytes out of %d", len(r.key), len(r.value), len(b))
			}
			return nil
		})
	})
}

// FuzzReplayRecord: a coordinator loading a partition whose log holds any
// key and value (well framed, so they reach the key and value decoders)
// either loads it or fails with an error, never a panic.
func FuzzReplayRecord(f *testing.F) {
	for _, r := range groupRecordSeeds() {
		f.Add(r.key, r.value, r.value == nil)
	}
	f.Add([]byte{0, 9}, []byte{}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		log := NewMemLog()
		log.parts[0] = [][]byte{encodeBatch(groupRecordSeeds(), 1), encodeBatch([]record{{key: key, value: value}}, 2)}
		cfg := DefaultConfig()
		cfg.Partitions = 1
		c, err := New(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.Load(0)
	})
}
