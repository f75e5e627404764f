package wire

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/testcerts"
	"github.com/spool-log/spool/partition"
)

// BenchmarkFetchLoopback measures Fetch throughput over a loopback TCP
// connection, one 1 MiB record region per response, by sendfile, by the
// copy fallback, and through TLS (AES-GCM, which must copy). Compare the
// MB/s figures of one run; the tls run also reports its throughput as a
// share of each plaintext run's (tls/sendfile, tls/copy):
//
//	go test -run='^$' -bench=FetchLoopback -benchtime=2s ./wire/
func BenchmarkFetchLoopback(b *testing.B) {
	const regionSize = 1 << 20
	data := make([]byte, 8*regionSize)
	for i := range data {
		data[i] = byte(i)
	}
	plainNsPerOp := map[string]float64{} // the last run of each plaintext mode
	for _, mode := range []string{"sendfile", "copy", "tls"} {
		b.Run(mode, func(b *testing.B) {
			f := segmentFile(b, data)
			cfg := DefaultConfig()
			cfg.Versions = testVersions()
			cfg.Sendfile = mode != "copy"
			cfg.Log = discardLog()
			var opts ListenerOptions
			var clientTLS *tls.Config
			if mode == "tls" {
				ca := testcerts.NewCA(b, "bench-ca")
				opts.TLS = tlsServerConfig(b, ca, nil)
				clientTLS = testcerts.ClientConfig(ca)
			}
			n := 0
			srv, addr := startListener(b, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
				pos := int64(n%8) * regionSize
				n++
				return &FetchResponse{Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
					PreferredReadReplica: -1,
					Records:              partition.NewSlice([]partition.Region{{File: f, Position: pos, Length: regionSize}}, nil),
				}}}}}
			}), opts)
			c := dialRaw(b, addr)
			if clientTLS != nil {
				tc := tls.Client(c.nc, clientTLS)
				if err := tc.Handshake(); err != nil {
					b.Fatal(err)
				}
				c.nc = tc
			}
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
			nsPerOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if mode != "tls" {
				plainNsPerOp[mode] = nsPerOp
			} else {
				for _, plain := range []string{"sendfile", "copy"} {
					if ns := plainNsPerOp[plain]; ns > 0 {
						b.ReportMetric(ns/nsPerOp, "tls/"+plain)
					}
				}
			}
			st := srv.Stats()
			b.ReportMetric(float64(st.SendfileBytes)/float64(st.SendfileBytes+st.CopyBytes), "sendfile-share")
		})
	}
}
