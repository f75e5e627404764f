package access

import (
	"sync/atomic"

	"github.com/hashicorp/go-metrics"
)

// Counters is where metrics go (node/admin's Metrics).
type Counters interface {
	IncrCounter(key []string, val float32)
	IncrCounterWithLabels(key []string, val float32, labels []metrics.Label)
}

// saslCounts are the SASL authentications this node completed and
// refused, counted where they happen (SASLAuthenticated, SASLFailed).
type saslCounts struct {
	authentications atomic.Int64
	failures        atomic.Int64
}

// securityCounts are the totals behind the security metrics.
type securityCounts struct{ tlsHandshakeFailures, saslAuthentications, saslFailures int64 }

// SASLAuthenticated counts an authentication completed.
func (g *Guard) SASLAuthenticated() { g.sasl.authentications.Add(1) }

// SASLFailed counts an authentication refused.
func (g *Guard) SASLFailed() { g.sasl.failures.Add(1) }

// SASLCounts are the authentications completed and refused so far
// (/v1/stats).
func (g *Guard) SASLCounts() (authentications, failures int64) {
	return g.sasl.authentications.Load(), g.sasl.failures.Load()
}

// FlushSecurityMetrics emits the TLS handshake failures and SASL
// authentications and failures counted since the last flush
// (spool_tls_handshake_failures, spool_sasl_authentications,
// spool_sasl_authentication_failures). One flush runs at a time (the
// node's flushMetrics); it alone advances the flushed marks.
func (g *Guard) FlushSecurityMetrics(out Counters) {
	now := securityCounts{
		saslAuthentications: g.sasl.authentications.Load(),
		saslFailures:        g.sasl.failures.Load(),
	}
	if st, ok := g.deps.ServerStats(); ok {
		now.tlsHandshakeFailures = st.TLSHandshakeFailures
	}
	was := g.flushedSecurity
	for _, c := range []struct {
		name     []string
		now, was int64
	}{
		{[]string{"tls", "handshake", "failures"}, now.tlsHandshakeFailures, was.tlsHandshakeFailures},
		{[]string{"sasl", "authentications"}, now.saslAuthentications, was.saslAuthentications},
		{[]string{"sasl", "authentication", "failures"}, now.saslFailures, was.saslFailures},
	} {
		if d := c.now - c.was; d > 0 {
			out.IncrCounter(c.name, float32(d))
		}
	}
	g.flushedSecurity = now
}
