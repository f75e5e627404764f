package wire

import (
	"context"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/partition"
)

// BenchmarkFetchLoopback measures Fetch throughput over a loopback TCP
// connection, one 1 MiB record region per response, by sendfile and by the
// copy fallback. Compare the two MB/s figures of one run:
//
//	go test -run='^$' -bench=FetchLoopback -benchtime=2s ./wire/
func BenchmarkFetchLoopback(b *testing.B) {
	const regionSize = 1 << 20
	data := make([]byte, 8*regionSize)
	for i := range data {
		data[i] = byte(i)
	}
	for _, useSendfile := range []bool{true, false} {
		b.Run(map[bool]string{true: "sendfile", false: "copy"}[useSendfile], func(b *testing.B) {
			f := segmentFile(b, data)
			cfg := DefaultConfig()
			cfg.Versions = testVersions()
			cfg.Sendfile = useSendfile
			cfg.Log = discardLog()
			n := 0
			srv, addr := startServer(b, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
				pos := int64(n%8) * regionSize
				n++
				return &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
					PreferredReadReplica: -1,
					Records:              partition.NewSlice([]partition.Region{{File: f, Position: pos, Length: regionSize}}, nil),
				}}}}}
			}))
			c := dialRaw(b, addr)
			fetch := kmsg.NewPtrFetchRequest()
			fetch.Version = 12
			frame := kmsg.NewRequestFormatter().AppendRequest(nil, fetch, 1)
			var size [4]byte
			b.SetBytes(regionSize)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.nc.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c.nc, size[:]); err != nil {
					b.Fatal(err)
				}
				if _, err := io.CopyN(io.Discard, c.nc, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := srv.Stats()
			b.ReportMetric(float64(st.SendfileBytes)/float64(st.SendfileBytes+st.CopyBytes), "sendfile-share")
		})
	}
}
