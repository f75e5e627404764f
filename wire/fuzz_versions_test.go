package wire

import (
	"bytes"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allVersions is every key and version kmsg can decode: a table wider than
// any broker's, so fuzzing reaches every request decoder.
func allVersions() map[int16]VersionRange {
	out := map[int16]VersionRange{}
	for k := int16(0); k < 200; k++ {
		if req := kmsg.RequestForKey(k); req != nil {
			out[k] = VersionRange{Min: 0, Max: req.MaxVersion()}
		}
	}
	return out
}

// FuzzDecodeEveryRequest is FuzzDecodeRequest over every request kmsg
// knows, at every version, seeded with each one's default encoding (and a
// Produce and Fetch with content at their newest versions): whatever the
// key and version, the bytes a client sends decode or fail, never panic.
func FuzzDecodeEveryRequest(f *testing.F) {
	versions := allVersions()
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	for k, rng := range versions {
		for v := rng.Min; v <= rng.Max; v++ {
			req := kmsg.RequestForKey(k)
			req.SetVersion(v)
			f.Add(formatter.AppendRequest(nil, req, 1))
		}
	}
	for _, v := range []int16{10, 12, 13} {
		pr := kmsg.NewPtrProduceRequest()
		pr.Version = v
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic, pt.TopicID = "orders", [16]byte{1}
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = bytes.Repeat([]byte{1}, 70)
		pt.Partitions = append(pt.Partitions, pp)
		pr.Topics = append(pr.Topics, pt)
		f.Add(formatter.AppendRequest(nil, pr, 2))
	}
	for _, v := range []int16{13, 16, 17} {
		fr := kmsg.NewPtrFetchRequest()
		fr.Version = v
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = [16]byte{2}
		ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
		fr.Topics = append(fr.Topics, ft)
		fr.ForgottenTopics = append(fr.ForgottenTopics, kmsg.FetchRequestForgottenTopic{TopicID: [16]byte{3}, Partitions: []int32{1}})
		f.Add(formatter.AppendRequest(nil, fr, 3))
	}

	d := decoder{versions: versions, apiVersions: newAPIVersionsAnswerer(clampVersions(versions, discardLog()))}
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			frame, err := readFrame(r, 1<<20)
			if err != nil {
				return
			}
			in, err := d.decode(frame, remote)
			if err != nil {
				return
			}
			if in.answer == nil {
				if rng := versions[in.req.APIKey]; !rng.Contains(in.req.APIVersion) {
					t.Fatalf("decoded key %d version %d outside %v", in.req.APIKey, in.req.APIVersion, rng)
				}
				in.req.Body.AppendTo(nil)
			}
		}
	})
}
