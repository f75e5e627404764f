package wire

// The Fetch response (key 1) is encoded here by hand rather than with kmsg so
// that record bytes never pass through user space: the header and every
// partition's fields are buffered, and each partition's records are sent
// from its segment files (partition.Slice regions) after them.
//
// Layout by version (checked byte for byte against kmsg in the tests):
//
//	v1+   throttle_time_ms
//	v7+   error_code, session_id (fetch sessions, KIP-227)
//	      topics: name (v0–12) or topic_id (v13+)
//	      partitions: partition, error_code, high_watermark,
//	        v4+ last_stable_offset, v5+ log_start_offset,
//	        v4+ aborted_transactions (always null: Spool has no transactions),
//	        v11+ preferred_read_replica, records
//	v12+  flexible: compact strings/arrays/bytes, tagged-field sections,
//	      and response header v1
//	v12+  tagged fields written when set: a partition's current_leader
//	      (tag 1) and the response's node_endpoints (tag 0); Kafka (and the
//	      node) sets them from v16 (KIP-951). Spool writes no
//	      diverging_epoch or snapshot_id (tags 0 and 2 of a partition: those
//	      are for replicas fetching, which clients never are).
//
// Records are NULLABLE_BYTES (COMPACT_NULLABLE_BYTES from v12) but are never
// sent null: a nil Slice is sent as zero bytes, as Kafka does, because some
// clients (librdkafka) reject a negative record-set size.

import (
	"fmt"

	"github.com/spool-log/spool/partition"
)

// maxFetchVersion is the highest Fetch version encodeFetch writes.
const maxFetchVersion = 18

// FetchResponse is a Fetch answer whose records are file regions. wire owns
// the Slices once the Handler returns it: each is Released after sending, or
// when the connection fails or closes first.
type FetchResponse struct {
	ThrottleMillis int32
	ErrorCode      int16 // v7+
	SessionID      int32 // v7+
	Topics         []FetchTopic
	// NodeEndpoints (v12+ tag 0) are the brokers a CurrentLeader names.
	NodeEndpoints []FetchNodeEndpoint
}

// FetchNodeEndpoint is one broker of FetchResponse.NodeEndpoints.
type FetchNodeEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
}

// FetchLeader is a partition's current leader, told to a client that asked
// the wrong broker (KIP-951).
type FetchLeader struct {
	LeaderID    int32
	LeaderEpoch int32
}

// FetchTopic is one topic of a FetchResponse.
type FetchTopic struct {
	Topic      string   // v0–12
	TopicID    [16]byte // v13+
	Partitions []FetchPartition
}

// FetchPartition is one partition of a FetchResponse. Build it with
// NewFetchPartition: the zero PreferredReadReplica, 0, would send v11+
// clients to broker 0.
type FetchPartition struct {
	Partition            int32
	ErrorCode            int16
	HighWatermark        int64
	LastStableOffset     int64 // v4+
	LogStartOffset       int64 // v5+
	PreferredReadReplica int32 // v11+; -1 for none
	// CurrentLeader (v12+ tag 1) is sent when set.
	CurrentLeader *FetchLeader
	// AbortedTransactions (v4+) are the aborted transactions the
	// records may hold, for read_committed fetches; nil is sent as null.
	AbortedTransactions []FetchAborted

	// Records is sent as the partition's record set; nil sends none.
	Records *partition.Slice
}

// FetchAborted is an aborted transaction: its producer and first offset.
type FetchAborted struct {
	ProducerID  int64
	FirstOffset int64
}

// NewFetchPartition returns a FetchPartition with no preferred read replica
// and unknown (-1) offsets, ready for the handler to fill.
func NewFetchPartition(partition int32) FetchPartition {
	return FetchPartition{
		Partition:            partition,
		HighWatermark:        -1,
		LastStableOffset:     -1,
		LogStartOffset:       -1,
		PreferredReadReplica: -1,
	}
}

// Release releases every partition's Slice. wire calls it after sending; a
// Handler that builds a FetchResponse and then does not return it calls it.
func (r *FetchResponse) Release() {
	if r == nil {
		return
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			p.Records.Release()
		}
	}
}

// fetchFrame is an encoded Fetch response: the frame's buffered bytes, with
// the record regions that go between them.
type fetchFrame struct {
	buf    []byte       // size prefix, header and fields; records excluded
	splits []fetchSplit // ascending by at
}

// fetchSplit places regions in the frame: they are sent after buf[:at].
type fetchSplit struct {
	at      int
	regions []partition.Region
}

// encodeFetch lays out the response frame for a Fetch request of the given
// version and correlation ID, reusing dst's storage.
func encodeFetch(dst []byte, version int16, correlationID int32, r *FetchResponse) (*fetchFrame, error) {
	if version < 0 || version > maxFetchVersion {
		return nil, fmt.Errorf("fetch response version %d is outside 0-%d", version, maxFetchVersion)
	}
	flexible := version >= 12
	f := &fetchFrame{}
	b := appendResponseHeader(dst[:0], correlationID, flexible)
	var records int64
	if version >= 1 {
		b = appendInt32(b, r.ThrottleMillis)
	}
	if version >= 7 {
		b = appendInt16(b, r.ErrorCode)
		b = appendInt32(b, r.SessionID)
	}
	b = appendArrayLen(b, len(r.Topics), flexible)
	for ti := range r.Topics {
		t := &r.Topics[ti]
		if version >= 13 {
			b = append(b, t.TopicID[:]...)
		} else {
			b = appendString(b, t.Topic, flexible)
		}
		b = appendArrayLen(b, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			b = appendInt32(b, p.Partition)
			b = appendInt16(b, p.ErrorCode)
			b = appendInt64(b, p.HighWatermark)
			if version >= 4 {
				b = appendInt64(b, p.LastStableOffset)
			}
			if version >= 5 {
				b = appendInt64(b, p.LogStartOffset)
			}
			if version >= 4 {
				if p.AbortedTransactions == nil {
					b = appendNullArrayLen(b, flexible)
				} else {
					b = appendArrayLen(b, len(p.AbortedTransactions), flexible)
					for _, a := range p.AbortedTransactions {
						b = appendInt64(b, a.ProducerID)
						b = appendInt64(b, a.FirstOffset)
						if flexible {
							b = appendEmptyTags(b)
						}
					}
				}
			}
			if version >= 11 {
				b = appendInt32(b, p.PreferredReadReplica)
			}
			size := p.Records.Size()
			if size < 0 || size > maxFrameSize {
				return nil, fmt.Errorf("fetch records for partition %d: %d bytes do not fit a frame", p.Partition, size)
			}
			b = appendBytesLen(b, int32(size), flexible)
			if size > 0 {
				f.splits = append(f.splits, fetchSplit{at: len(b), regions: p.Records.Regions})
				records += size
			}
			if flexible {
				if p.CurrentLeader == nil {
					b = appendEmptyTags(b) // partition
				} else {
					// One tag, 1, of 9 bytes: two int32s and empty tags.
					b = append(b, 1, 1, 9)
					b = appendInt32(b, p.CurrentLeader.LeaderID)
					b = appendInt32(b, p.CurrentLeader.LeaderEpoch)
					b = appendEmptyTags(b)
				}
			}
		}
		if flexible {
			b = appendEmptyTags(b) // topic
		}
	}
	if flexible {
		if len(r.NodeEndpoints) == 0 {
			b = appendEmptyTags(b) // response
		} else {
			b = appendNodeEndpoints(b, r.NodeEndpoints)
		}
	}
	total := int64(len(b)-4) + records
	if total > maxFrameSize {
		return nil, fmt.Errorf("fetch response of %d bytes does not fit a frame", total)
	}
	f.buf = b
	putFrameSize(b, int32(total))
	return f, nil
}

// appendNodeEndpoints writes the response's tag section holding one tag, 0:
// the node endpoints, sized before they are written.
func appendNodeEndpoints(b []byte, eps []FetchNodeEndpoint) []byte {
	var body []byte
	body = appendArrayLen(body, len(eps), true)
	for _, ep := range eps {
		body = appendInt32(body, ep.NodeID)
		body = appendString(body, ep.Host, true)
		body = appendInt32(body, ep.Port)
		if ep.Rack == nil {
			body = append(body, 0) // compact nullable string: null
		} else {
			body = appendString(body, *ep.Rack, true)
		}
		body = appendEmptyTags(body)
	}
	b = append(b, 1, 0) // one tag: 0
	b = appendUvarint(b, uint32(len(body)))
	return append(b, body...)
}
