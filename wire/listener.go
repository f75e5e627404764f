package wire

// A Server may serve several listeners at once, each with its own options:
// TLS for the SSL and SASL_SSL listeners, and a per-connection context
// through which the Handler learns which listener a request came in on and
// keeps per-connection state (a SASL session). The options belong to the
// listener rather than the Server because Kafka's are per listener
// (listener.name.<name>.ssl.*).

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// ListenerOptions configure one listener served by ServeListener.
type ListenerOptions struct {
	// TLS, when set, makes every connection a TLS server connection with
	// this configuration. The handshake is completed before any request is
	// read and must finish within RequestReadTimeout; a connection that
	// fails it (a plaintext client, a client certificate the configuration
	// refuses) is closed and counted in Stats.TLSHandshakeFailures. Record
	// bytes of Fetch responses then go through the TLS connection with the
	// user-space copy: sendfile(2) writes file bytes to the socket
	// unencrypted, so it cannot be used. (Kernel TLS, kTLS, would give
	// sendfile back: once the handshake is done in user space, the session
	// keys are handed to the kernel with setsockopt(SOL_TLS), which then
	// encrypts what sendfile sends, without the pread/encrypt/write copies
	// through user space. Go's crypto/tls does not support it.)
	TLS *tls.Config

	// ConnContext, when set, derives each connection's context (the one
	// handed to the Handler) from the base context, after the TLS
	// handshake if any. It must return ctx or a context derived from it.
	ConnContext func(ctx context.Context, nc net.Conn) context.Context

	// RequestLimit, when set, is asked with the connection's context before
	// each request frame is read, for a bound tighter than MaxRequestBytes
	// (0 or less: none). A SASL listener bounds what an unauthenticated
	// client may make the server read and hold, as Kafka's
	// sasl.server.max.receive.size does. A bigger frame closes the
	// connection as a protocol error.
	RequestLimit func(ctx context.Context) int32

	// Admit, when set, is asked for every connection accepted, before
	// anything is read from it. A positive duration refuses it: the
	// connection is closed that long later, nothing read or answered
	// (Kafka's per-IP connection rate quota, KIP-612, which delays the
	// close so that a client does not reconnect at once), and counted in
	// Stats.ConnectionsThrottled.
	Admit func(remote net.Addr) time.Duration
}

// ServeListener is Serve with per-listener options.
func (s *Server) ServeListener(ln net.Listener, opts ListenerOptions) error {
	return s.serve(ln, opts)
}

// handshake completes a TLS connection's handshake within the request read
// timeout; other connections need none.
func (c *conn) handshake() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	deadline := time.Now().Add(c.srv.cfg.RequestReadTimeout)
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.srv.stats.tlsHandshakeFailures.Add(1)
		return fmt.Errorf("tls handshake: %w", err)
	}
	return nil
}
