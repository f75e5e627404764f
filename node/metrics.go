package node

import (
	"github.com/hashicorp/go-metrics"
)

// The node counts its request-path metrics with atomics where they happen
// (node/admin/metrics.go says why); flushMetrics hands them to go-metrics.

// flushMetrics emits what was counted since the last flush: every
// admin.FlushInterval while the node runs, and once more in Shutdown after
// requests have drained. Only one of these runs at a time; they alone
// advance the flushed marks.
func (n *Node) flushMetrics() {
	out := n.stats.bytesOut.Load()
	if d := out - n.flushedBytesOut; d > 0 {
		n.metrics.IncrCounter([]string{"fetch", "bytes"}, float32(d))
	}
	n.flushedBytesOut = out
	n.flushSecurityMetrics()
	n.flushTxnMetrics() // txns.go
	if n.mover != nil {
		n.mover.FlushMetrics() // node/moves
	}
	n.access.FlushQuotaMetrics(n.metrics) // node/access
	n.flushShareMetrics()                 // shares.go
	n.checkEvenFactors()                  // replication_factor.go
	for _, p := range n.localPartitions() {
		bytes, records := p.ProducedBytes.Load(), p.ProducedRecords.Load()
		db, dr := bytes-p.FlushedBytes, records-p.FlushedRecords
		if db == 0 && dr == 0 {
			continue
		}
		p.FlushedBytes, p.FlushedRecords = bytes, records
		labels := []metrics.Label{{Name: "topic", Value: p.Topic}}
		n.metrics.IncrCounterWithLabels([]string{"produce", "bytes"}, float32(db), labels)
		n.metrics.IncrCounterWithLabels([]string{"produce", "records"}, float32(dr), labels)
	}
}

// securityCounts are the totals behind the security metrics.
type securityCounts struct{ tlsHandshakeFailures, saslAuthentications, saslFailures int64 }

// flushSecurityMetrics emits the TLS handshake failures and SASL
// authentications and failures counted since the last flush
// (spool_tls_handshake_failures, spool_sasl_authentications,
// spool_sasl_authentication_failures).
func (n *Node) flushSecurityMetrics() {
	now := securityCounts{
		saslAuthentications: n.stats.saslAuthentications.Load(),
		saslFailures:        n.stats.saslFailures.Load(),
	}
	if n.server != nil {
		now.tlsHandshakeFailures = n.server.Stats().TLSHandshakeFailures
	}
	was := n.flushedSecurity
	for _, c := range []struct {
		name     []string
		now, was int64
	}{
		{[]string{"tls", "handshake", "failures"}, now.tlsHandshakeFailures, was.tlsHandshakeFailures},
		{[]string{"sasl", "authentications"}, now.saslAuthentications, was.saslAuthentications},
		{[]string{"sasl", "authentication", "failures"}, now.saslFailures, was.saslFailures},
	} {
		if d := c.now - c.was; d > 0 {
			n.metrics.IncrCounter(c.name, float32(d))
		}
	}
	n.flushedSecurity = now
}
