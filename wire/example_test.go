package wire_test

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// A broker fills the version table, answers requests by type, and serves.
func Example() {
	cfg := wire.DefaultConfig()
	cfg.Versions[3] = wire.VersionRange{Min: 1, Max: 12} // Metadata
	cfg.Versions[0] = wire.VersionRange{Min: 3, Max: 9}  // Produce

	srv := wire.NewServer(cfg, wire.HandlerFunc(func(ctx context.Context, req *wire.Request) wire.Response {
		switch body := req.Body.(type) {
		case *kmsg.MetadataRequest:
			return kmsg.NewPtrMetadataResponse() // wire sets the version
		case *kmsg.ProduceRequest:
			resp := kmsg.NewPtrProduceResponse()
			for _, t := range body.Topics {
				_ = t // append each partition's Records, fill resp
			}
			return resp // with acks=0, wire sends nothing back

		}
		return wire.CloseConnection
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	go srv.Serve(ln)
	srv.Shutdown(context.Background())
}
