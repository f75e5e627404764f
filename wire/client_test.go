package wire

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/spool-log/spool/internal/retry"
)

// keyCounter is a kgo hook counting the requests a client wrote, by key.
type keyCounter struct {
	mu     sync.Mutex
	writes map[int16]int
}

func (k *keyCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.writes[key]++
	}
}

func (k *keyCounter) count(key int16) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.writes[key]
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestKgoMetadataEveryVersion proves framing and header versions with a real
// client: each Metadata version from 1 (header v1) to 12 (flexible, header
// v2 / response header v1) round-trips.
func TestKgoMetadataEveryVersion(t *testing.T) {
	for _, max := range []int16{1, 4, 8, 9, 12} {
		t.Run(fmt.Sprintf("max_v%d", max), func(t *testing.T) {
			_, b := startMiniBroker(t, func(c *Config) { c.Versions[3] = VersionRange{1, max} })
			cl := newClient(t, b.addr)
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(miniTopic)
			req.Topics = []kmsg.MetadataRequestTopic{rt}
			resp, err := req.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Version != max {
				t.Fatalf("client used Metadata v%d, want v%d", resp.Version, max)
			}
			if len(resp.Topics) != 1 || *resp.Topics[0].Topic != miniTopic || len(resp.Brokers) != 1 {
				t.Fatalf("unexpected metadata %+v", resp)
			}
		})
	}
}

// TestKgoApiVersionsDowngrade: kgo opens with the newest ApiVersions it
// knows (v5, or v4 when capped); a server that supports less answers
// UNSUPPORTED_VERSION in v0 form listing its range, and the client retries at
// that version on the same connection and carries on.
func TestKgoApiVersionsDowngrade(t *testing.T) {
	for _, tc := range []struct {
		rng        VersionRange
		clientMax  int16 // 0: kgo's default
		wantWrites int
	}{
		{VersionRange{0, 3}, 0, 2}, // v5 rejected, v3 accepted
		{VersionRange{0, 3}, 4, 2}, // v4 rejected, v3 accepted
		{VersionRange{0, 4}, 4, 1}, // v4 accepted at once
	} {
		t.Run(fmt.Sprintf("server_%d-%d_client_%d", tc.rng.Min, tc.rng.Max, tc.clientMax), func(t *testing.T) {
			_, b := startMiniBroker(t, func(c *Config) { c.Versions[18] = tc.rng })
			hook := &keyCounter{writes: map[int16]int{}}
			opts := []kgo.Opt{kgo.WithHooks(hook)}
			if tc.clientMax > 0 {
				v := kversion.Stable()
				v.SetMaxKeyVersion(18, tc.clientMax)
				opts = append(opts, kgo.MaxVersions(v))
			}
			cl := newClient(t, b.addr, opts...)
			if err := cl.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := hook.count(18); got != tc.wantWrites {
				t.Fatalf("client sent %d ApiVersions requests, want %d", got, tc.wantWrites)
			}
			if hook.count(3) == 0 {
				t.Fatal("no Metadata request after ApiVersions")
			}
		})
	}
}

// TestKgoProduceConsume round-trips records through the mini broker: Produce
// decoded by kmsg, Fetch answered by hand with sendfile, at the newest
// versions kgo and the table share, and with an old version cap.
func TestKgoProduceConsume(t *testing.T) {
	for _, tc := range []struct {
		name     string
		versions *kversion.Versions
		sendfile bool
		acks     kgo.Acks
	}{
		{"latest_sendfile", nil, true, kgo.AllISRAcks()},
		{"latest_copy", nil, false, kgo.LeaderAck()},
		{"kafka_1.1_acks0", kversion.V1_1_0(), true, kgo.NoAck()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, b := startMiniBroker(t, func(c *Config) { c.Sendfile = tc.sendfile })
			opts := []kgo.Opt{
				kgo.DefaultProduceTopic(miniTopic),
				kgo.ConsumeTopics(miniTopic),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.RequiredAcks(tc.acks),
				kgo.DisableIdempotentWrite(),
				kgo.FetchMaxWait(200 * time.Millisecond),
			}
			if tc.versions != nil {
				opts = append(opts, kgo.MaxVersions(tc.versions))
			}
			cl := newClient(t, b.addr, opts...)
			const n = 500
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for i := 0; i < n; i++ {
				cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("value-%d", i))}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got := 0
			for got < n {
				fetches := cl.PollFetches(ctx)
				if err := fetches.Err(); err != nil {
					t.Fatalf("fetch after %d records: %v", got, err)
				}
				fetches.EachRecord(func(r *kgo.Record) {
					if want := fmt.Sprintf("value-%d", got); string(r.Value) != want || r.Offset != int64(got) {
						t.Fatalf("record %d: offset %d value %q, want %q", got, r.Offset, r.Value, want)
					}
					got++
				})
			}
			// The server counts a response's bytes once its write returns,
			// which may be after the client has read them.
			retry.Run(t, 5*time.Second, func() error {
				st := srv.Stats()
				if tc.sendfile && (st.SendfileBytes == 0 || st.CopyBytes != 0) {
					return fmt.Errorf("sendfile path not used: %+v", st)
				}
				if !tc.sendfile && (st.CopyBytes == 0 || st.SendfileBytes != 0) {
					return fmt.Errorf("copy path not used: %+v", st)
				}
				return nil
			})
		})
	}
}
