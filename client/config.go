package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Config is where the cluster is and how long to wait for it.
type Config struct {
	Brokers   string        // comma-separated Kafka addresses of Spool nodes
	Timeout   time.Duration // how long one operation waits for a node to answer
	AdminAddr string        // admin HTTP address (host:port, or https://host:port) of a node, for the cluster operations

	// TLS, when set, dials the brokers with it; SASL, when set,
	// authenticates to them with it: what a node's SSL, SASL_PLAINTEXT and
	// SASL_SSL listeners need. AdminTLS is for an https:// AdminAddr (nil:
	// the system's roots).
	TLS      *tls.Config
	SASL     sasl.Mechanism
	AdminTLS *tls.Config
	// AdminToken, when set, is sent to the admin API as
	// "Authorization: Bearer <AdminToken>" (nodes with --admin-token-file).
	AdminToken string
}

// Seeds is Brokers as a list.
func (c Config) Seeds() []string {
	var out []string
	for _, s := range strings.Split(c.Brokers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Kafka connects to the brokers and checks, within Timeout, that one
// answers, so a missing node is a clear error instead of a hang.
func (c Config) Kafka(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := c.Seeds()
	if len(seeds) == 0 {
		return nil, errors.New("no brokers given (set --brokers or SPOOL_BROKERS)")
	}
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(c.Timeout),
		kgo.ClientID("spool-cli"),
	}, opts...)
	if c.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(c.TLS.Clone()))
	}
	if c.SASL != nil {
		opts = append(opts, kgo.SASL(c.SASL))
	}
	if refused(seeds, c.Timeout) {
		return nil, fmt.Errorf("nothing listens at %s (connection refused): is `spool node` running there? (set --brokers or SPOOL_BROKERS)", c.Brokers)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no Spool node answered at %s within %v: is `spool node` running? (set --brokers): %w", c.Brokers, c.Timeout, err)
	}
	return cl, nil
}

// Admin is Kafka wrapped for admin requests; done closes it.
func (c Config) Admin(ctx context.Context) (adm *kadm.Client, done func(), err error) {
	cl, err := c.Kafka(ctx)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// boundedAdmin is Admin on ctx ending after Timeout: one-shot operations
// (listing, describing, creating) finish within it, whatever is down; done
// releases both.
func (g Config) boundedAdmin(ctx context.Context) (context.Context, *kadm.Client, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	adm, done, err := g.Admin(ctx)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, adm, func() { done(); cancel() }, nil
}

// refused reports, within a short dial each, whether every address refuses
// connections: nothing listens there, which waiting will not change.
func refused(addrs []string, timeout time.Duration) bool {
	for _, a := range addrs {
		c, err := net.DialTimeout("tcp", a, min(timeout, 2*time.Second))
		if err == nil {
			c.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
	}
	return len(addrs) > 0
}
