package wire

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// fetchCase builds the same Fetch response twice: as a FetchResponse whose
// records are regions of a real file, and as a kmsg.FetchResponse with the
// records inline.
func fetchCase(t *testing.T, version int16) (*FetchResponse, *kmsg.FetchResponse, *int) {
	data := make([]byte, 300_000)
	rand.Read(data)
	f := segmentFile(t, data)
	released := new(int)
	slice := func(spans ...[2]int64) *partition.Slice {
		var regions []partition.Region
		for _, s := range spans {
			regions = append(regions, partition.Region{File: f, Position: s[0], Length: s[1]})
		}
		return partition.NewSlice(regions, func() { *released++ })
	}
	inline := func(spans ...[2]int64) []byte {
		out := []byte{}
		for _, s := range spans {
			out = append(out, data[s[0]:s[0]+s[1]]...)
		}
		return out
	}

	type part struct {
		id    int32
		err   int16
		spans [][2]int64
		null  bool
	}
	topics := []struct {
		name  string
		parts []part
	}{
		{"orders", []part{
			{id: 0, spans: [][2]int64{{0, 1000}}},
			{id: 1, spans: [][2]int64{{1000, 70_000}, {80_000, 200_000}}}, // two regions, copy buffer wraps
			{id: 2, null: true}, // nil Slice
			{id: 3, err: 6, spans: nil},
		}},
		{"a-topic-with-a-longer-name.x_y", []part{{id: 7, spans: [][2]int64{{5, 3}}}}},
		{"empty", nil},
	}

	ours := &FetchResponse{ThrottleMillis: 17, ErrorCode: 0, SessionID: 991}
	theirs := kmsg.NewPtrFetchResponse()
	theirs.Version = version
	theirs.ThrottleMillis, theirs.SessionID = 17, 991
	for ti, tp := range topics {
		id := [16]byte{byte(ti + 1), 2, 3}
		ft := FetchTopic{Topic: tp.name, TopicID: id}
		kt := kmsg.NewFetchResponseTopic()
		kt.Topic, kt.TopicID = tp.name, id
		for _, p := range tp.parts {
			fp := NewFetchPartition(p.id)
			fp.ErrorCode = p.err
			fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = 1000+int64(p.id), 900+int64(p.id), 5
			kp := kmsg.NewFetchResponseTopicPartition()
			kp.Partition, kp.ErrorCode = p.id, p.err
			kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset = fp.HighWatermark, fp.LastStableOffset, 5
			kp.PreferredReadReplica = -1
			kp.RecordBatches = []byte{} // a nil Slice is sent as empty, never null
			if !p.null {
				fp.Records = slice(p.spans...)
				kp.RecordBatches = inline(p.spans...)
			}
			if p.err == 6 { // NOT_LEADER_OR_FOLLOWER names the leader (tag 1)
				fp.CurrentLeader = &FetchLeader{LeaderID: 2, LeaderEpoch: 5}
				kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = 2, 5
			}
			ft.Partitions = append(ft.Partitions, fp)
			kt.Partitions = append(kt.Partitions, kp)
		}
		ours.Topics = append(ours.Topics, ft)
		theirs.Topics = append(theirs.Topics, kt)
	}
	// Node endpoints (response tag 0), one with a rack and one without.
	rack := "r1"
	ours.NodeEndpoints = []FetchNodeEndpoint{{NodeID: 2, Host: "h2.example", Port: 9092, Rack: &rack}, {NodeID: 3, Host: "h3", Port: 19092}}
	for _, ep := range ours.NodeEndpoints {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = ep.NodeID, ep.Host, ep.Port, ep.Rack
		theirs.Brokers = append(theirs.Brokers, b)
	}
	return ours, theirs, released
}

// kmsgFrame is what a response frame should be, built with kmsg.
func kmsgFrame(resp kmsg.Response, corr int32) []byte {
	frame := appendResponseHeader(nil, corr, resp.IsFlexible())
	frame = resp.AppendTo(frame)
	finishFrame(frame)
	return frame
}

// TestFetchResponseMatchesKmsg is the encoding's proof: for every version,
// the hand-written frame, with records copied from the file, equals kmsg's.
func TestFetchResponseMatchesKmsg(t *testing.T) {
	for v := int16(0); v <= maxFetchVersion; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			ours, theirs, released := fetchCase(t, v)
			want := kmsgFrame(theirs, 12345)

			frame, err := encodeFetch(nil, v, 12345, ours)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			st := &stats{}
			fw := &frameWriter{w: &buf, stats: st}
			if err := fw.writeFetch(frame); err != nil {
				t.Fatal(err)
			}
			ours.Release()
			if !bytes.Equal(buf.Bytes(), want) {
				at := 0
				for at < min(buf.Len(), len(want)) && buf.Bytes()[at] == want[at] {
					at++
				}
				t.Fatalf("v%d: frame differs from kmsg at byte %d (ours %d bytes, kmsg %d)", v, at, buf.Len(), len(want))
			}
			if st.copyBytes.Load() != 1000+70_000+200_000+3 || st.sendfileBytes.Load() != 0 {
				t.Fatalf("copy %d sendfile %d bytes", st.copyBytes.Load(), st.sendfileBytes.Load())
			}
			if *released != 4 { // every non-nil Slice, empty ones included
				t.Fatalf("%d slices released, want 4", *released)
			}

			// And a client reads it back.
			back := kmsg.NewPtrFetchResponse()
			back.Version = v
			body := buf.Bytes()[8:]
			if v >= 12 {
				body = body[1:]
			}
			if err := back.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			if got := back.Topics[0].Partitions[1].RecordBatches; !bytes.Equal(got, theirs.Topics[0].Partitions[1].RecordBatches) {
				t.Fatal("records differ after decoding")
			}
		})
	}
}

// TestNewFetchPartitionMatchesKmsgDefaults: an untouched partition encodes
// as kmsg's defaults do (no preferred replica).
func TestNewFetchPartitionMatchesKmsgDefaults(t *testing.T) {
	kp := kmsg.NewFetchResponseTopicPartition()
	kp.Partition, kp.RecordBatches = 3, []byte{}
	kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset = -1, -1, -1
	theirs := kmsg.NewPtrFetchResponse()
	theirs.Version = 12
	kt := kmsg.NewFetchResponseTopic()
	kt.Topic, kt.Partitions = "t", []kmsg.FetchResponseTopicPartition{kp}
	theirs.Topics = []kmsg.FetchResponseTopic{kt}
	ours := &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{NewFetchPartition(3)}}}}
	frame, err := encodeFetch(nil, 12, 1, ours)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(frame.buf, kmsgFrame(theirs, 1)) {
		t.Fatal("default partition differs from kmsg's")
	}
}

func TestFetchResponseRejects(t *testing.T) {
	f := segmentFile(t, []byte("abc"))
	resp := &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
		Records: partition.NewSlice([]partition.Region{{File: f, Position: 0, Length: 1 << 31}}, nil),
	}}}}}
	if _, err := encodeFetch(nil, 12, 1, resp); err == nil {
		t.Fatal("a 2 GiB record set was encoded")
	}
	if _, err := encodeFetch(nil, maxFetchVersion+1, 1, &FetchResponse{}); err == nil {
		t.Fatal("an unknown version was encoded")
	}

	// A region past the end of its file fails rather than sending short.
	short := &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
		Records: partition.NewSlice([]partition.Region{{File: f, Position: 1, Length: 10}}, nil),
	}}}}}
	frame, err := encodeFetch(nil, 12, 1, short)
	if err != nil {
		t.Fatal(err)
	}
	fw := &frameWriter{w: &bytes.Buffer{}, stats: &stats{}}
	if err := fw.writeFetch(frame); err == nil {
		t.Fatal("a region past EOF was sent")
	}
}
