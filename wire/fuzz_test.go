package wire

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDecodeRequest feeds arbitrary bytes through everything a client's
// bytes reach before the Handler: framing, header, kmsg body decoding, and
// wire's own ApiVersions answer. It must never panic, and a decoded request
// must have a version inside the table.
func FuzzDecodeRequest(f *testing.F) {
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seed := func(req kmsg.Request, version int16) {
		req.SetVersion(version)
		f.Add(formatter.AppendRequest(nil, req, 42))
	}
	for v := int16(0); v <= 4; v++ {
		av := kmsg.NewPtrApiVersionsRequest()
		av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0"
		seed(av, v)
	}
	for _, v := range []int16{1, 9, 12} {
		mr := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr("orders")
		mr.Topics = append(mr.Topics, t)
		seed(mr, v)
	}
	for _, v := range []int16{4, 11, 12} {
		fr := kmsg.NewPtrFetchRequest()
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "orders"
		ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
		fr.Topics = append(fr.Topics, ft)
		seed(fr, v)
	}
	for _, v := range []int16{3, 9} {
		pr := kmsg.NewPtrProduceRequest()
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "orders"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = bytes.Repeat([]byte{1}, 70)
		pt.Partitions = append(pt.Partitions, pp)
		pr.Topics = append(pr.Topics, pt)
		seed(pr, v)
	}
	f.Add([]byte{0, 0, 0, 8, 0, 18, 0, 99, 0, 0, 0, 1})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})

	versions := brokerVersions()
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
			req := in.req
			if in.answer == nil {
				if rng := versions[req.APIKey]; !rng.Contains(req.APIVersion) {
					t.Fatalf("decoded key %d version %d outside %v", req.APIKey, req.APIVersion, rng)
				}
				req.Body.AppendTo(nil)
				continue
			}
			var version int16 = req.APIVersion
			resp := in.answer
			if fv, ok := resp.(fixedVersion); ok {
				resp, version = fv.resp, fv.version
			}
			if _, err := appendKmsgResponse(nil, req, resp.(kmsg.Response), version); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func discardLog() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}
