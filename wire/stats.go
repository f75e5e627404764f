package wire

import "sync/atomic"

// Stats is a snapshot of a Server's counters, for metrics and tests.
type Stats struct {
	// SendfileBytes and CopyBytes count Fetch record bytes sent with
	// sendfile(2) and with the user-space copy.
	SendfileBytes, CopyBytes int64
	// RequestsTotal counts requests decoded, ApiVersions included.
	RequestsTotal int64
	// OpenConnections is the number of connections being served now.
	OpenConnections int64
	// ConnectionsTotal counts connections accepted.
	ConnectionsTotal int64
	// ProtocolErrors counts connections closed for a bad frame, header or
	// body, or an unsupported API key or version.
	ProtocolErrors int64
	// RequestReadTimeouts counts connections closed because a request did
	// not arrive whole within RequestReadTimeout of its first byte.
	RequestReadTimeouts int64
	// TLSHandshakeFailures counts TLS connections closed because their
	// handshake failed or did not finish in time.
	TLSHandshakeFailures int64
	// ConnectionsThrottled counts connections refused by
	// ListenerOptions.Admit.
	ConnectionsThrottled int64
	// ThrottledResponses counts responses after which a connection was
	// muted (Throttle).
	ThrottledResponses int64
	// QueuedRequestBytes is the memory held now by requests being read and
	// queued, against Config.QueuedMaxRequestBytes.
	QueuedRequestBytes int64
}

// stats holds the live counters behind Stats.
type stats struct {
	sendfileBytes, copyBytes, requests atomic.Int64
	open, accepted, protocolErrors     atomic.Int64
	requestTimeouts                    atomic.Int64
	tlsHandshakeFailures               atomic.Int64
	throttled                          atomic.Int64
	connectionsThrottled               atomic.Int64
}

func (s *stats) snapshot() Stats {
	return Stats{
		SendfileBytes:    s.sendfileBytes.Load(),
		CopyBytes:        s.copyBytes.Load(),
		RequestsTotal:    s.requests.Load(),
		OpenConnections:  s.open.Load(),
		ConnectionsTotal: s.accepted.Load(),
		ProtocolErrors:   s.protocolErrors.Load(),

		RequestReadTimeouts:  s.requestTimeouts.Load(),
		TLSHandshakeFailures: s.tlsHandshakeFailures.Load(),
		ThrottledResponses:   s.throttled.Load(),
		ConnectionsThrottled: s.connectionsThrottled.Load(),
	}
}
