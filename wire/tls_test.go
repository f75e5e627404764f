package wire

// TLS listeners: a real client produces and consumes through TLS (record
// bytes by the user-space copy, never sendfile), a client certificate is
// required when the listener asks for one, and clients that cannot
// complete the handshake are cut off without disturbing the others.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testcerts"
)

// tlsServerConfig is a server config presenting a certificate from ca and,
// with clientCA set, requiring client certificates from it.
func tlsServerConfig(t testing.TB, ca, clientCA *testcerts.CA) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.Server(t, "spool").TLS(t)}, MinVersion: tls.VersionTLS12}
	if clientCA != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCA.Pool()
	}
	return cfg
}

func TestTLSProduceConsumeCopiesRecords(t *testing.T) {
	ca := testcerts.NewCA(t, "server-ca")
	clientCA := testcerts.NewCA(t, "client-ca")
	srv, b := startMiniBrokerOn(t, func(c *Config) { c.Sendfile = true }, ListenerOptions{TLS: tlsServerConfig(t, ca, clientCA)})
	cl := newClient(t, b.addr,
		kgo.DialTLSConfig(testcerts.ClientConfig(ca, clientCA.Client(t, "alice").TLS(t))),
		kgo.DefaultProduceTopic(miniTopic),
		kgo.ConsumeTopics(miniTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableIdempotentWrite(),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 200
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("value-%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	got := 0
	for got < n {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatalf("fetch after %d records: %v", got, err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("value-%d", got); string(r.Value) != want {
				t.Fatalf("record %d: %q, want %q", got, r.Value, want)
			}
			got++
		})
	}
	retry.Run(t, 5*time.Second, func() error {
		if st := srv.Stats(); st.CopyBytes == 0 || st.SendfileBytes != 0 {
			return fmt.Errorf("records did not go by the copy through TLS: %+v", st)
		}
		return nil
	})
}

// TestTLSRefusedClientsDoNotDisturbOthers: a plaintext client, a client
// without a certificate and one whose certificate another CA signed each
// fail, counted as handshake failures, while a good client is served.
func TestTLSRefusedClientsDoNotDisturbOthers(t *testing.T) {
	ca := testcerts.NewCA(t, "server-ca")
	clientCA := testcerts.NewCA(t, "client-ca")
	otherCA := testcerts.NewCA(t, "other-ca")
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	cfg.RequestReadTimeout = 2 * time.Second
	srv, addr := startListener(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		return req.Body.ResponseKind()
	}), ListenerOptions{TLS: tlsServerConfig(t, ca, clientCA)})

	good, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca, clientCA.Client(t, "good").TLS(t)))
	if err != nil {
		t.Fatalf("good client: %v", err)
	}
	defer good.Close()

	// Plaintext: an ApiVersions request gets no answer, the socket closes.
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := plain.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	if n, err := plain.Read(buf); err == nil && n >= 4 && buf[0] == 0 && buf[1] == 0 {
		t.Fatalf("plaintext client got what looks like a Kafka frame: %x", buf[:n])
	}

	for name, certs := range map[string][]tls.Certificate{
		"no certificate":    nil,
		"another CA's cert": {otherCA.Client(t, "mallory").TLS(t)},
	} {
		c, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca, certs...))
		if err == nil {
			// TLS 1.3: the client learns of the refusal at its first read.
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 2))
			_, err = c.Read(buf)
			c.Close()
		}
		if err == nil {
			t.Fatalf("%s: connection served", name)
		}
	}

	// The good client is still served.
	if _, err := good.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 3)); err != nil {
		t.Fatal(err)
	}
	good.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := good.Read(buf); err != nil {
		t.Fatalf("good client after the refused ones: %v", err)
	}
	retry.Run(t, 5*time.Second, func() error {
		if got := srv.Stats().TLSHandshakeFailures; got != 3 {
			return fmt.Errorf("%d handshake failures counted, want 3", got)
		}
		return nil
	})
}

// TestTLSExpiredServerCertificateRefusedByClient: a client verifying the
// server refuses an expired certificate (what renewing it, and reloading
// it without a restart, is for).
func TestTLSExpiredServerCertificateRefusedByClient(t *testing.T) {
	ca := testcerts.NewCA(t, "server-ca")
	cfg := DefaultConfig()
	cfg.Versions = testVersions()
	_, addr := startListener(t, cfg, HandlerFunc(func(ctx context.Context, req *Request) Response {
		return req.Body.ResponseKind()
	}), ListenerOptions{TLS: &tls.Config{Certificates: []tls.Certificate{ca.ExpiredServer(t, "old").TLS(t)}, MinVersion: tls.VersionTLS12}})
	if c, err := tls.Dial("tcp", addr, testcerts.ClientConfig(ca)); err == nil {
		c.Close()
		t.Fatal("an expired server certificate was accepted")
	}
}
