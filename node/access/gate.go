package access

// The gate in front of every request on a SASL listener: before
// authentication only ApiVersions (which wire answers), SaslHandshake and
// SaslAuthenticate pass; anything else gets Kafka's ILLEGAL_SASL_STATE
// where its response has a top-level error code, and the connection is
// closed either way, so no data ever reaches an unauthenticated client.
// Once the session's lifetime (KIP-368) has passed, the next request other
// than re-authentication closes the connection, as Kafka does;
// re-authenticating (SaslHandshake + SaslAuthenticate on the same
// connection, same mechanism and user) starts a new lifetime.

import (
	"bytes"
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

// maxUnauthenticatedRequestBytes bounds each request of a client that has
// not authenticated yet (Kafka's sasl.server.max.receive.size): the SASL
// requests it may send are small, and nobody unknown should make the node
// read and hold up to MaxRequestBytes.
const maxUnauthenticatedRequestBytes = 512 << 10

// unauthenticatedRequestLimit is SASL listeners' wire.ListenerOptions.RequestLimit.
func unauthenticatedRequestLimit(ctx context.Context) int32 {
	if c := ConnOf(ctx); c != nil && c.SASL.User() == "" {
		return maxUnauthenticatedRequestBytes
	}
	return 0
}

// isSASLRequest reports the APIs a SASL listener serves before
// authentication (besides ApiVersions, which wire answers).
func isSASLRequest(key int16) bool {
	return key == int16(kmsg.SASLHandshake) || key == int16(kmsg.SASLAuthenticate) || key == wire.APIKeyRawSASL
}

// Gate answers a request that may not pass on its connection; ok is true
// when it may.
func (g *Guard) Gate(ctx context.Context, req *wire.Request) (wire.Response, bool) {
	return g.gate(ConnOf(ctx), req)
}

func (g *Guard) gate(c *Conn, req *wire.Request) (wire.Response, bool) {
	if !c.OnSASLListener() || isSASLRequest(req.APIKey) {
		return nil, true
	}
	switch c.SASL.State(time.Now()) {
	case sasl.Authenticated:
		return nil, true
	case sasl.Expired:
		g.log.WithField("user", c.SASL.User()).WithField("api_key", req.APIKey).
			Debug("closing a Kafka connection whose SASL session expired")
		return wire.CloseConnection, false
	}
	g.log.WithField("api_key", req.APIKey).WithField("listener", c.listener.Name).
		Debug("closing a Kafka connection that sent a request before authenticating")
	if resp := errorResponse(req.Body, kerr.IllegalSaslState.Code); resp != nil {
		return wire.ThenClose(resp), false
	}
	return wire.CloseConnection, false
}

// errorResponse is req's empty response carrying code in its top-level
// ErrorCode, or nil when that response has none at the request's version
// (Produce, Fetch, Metadata before v13, ...): those get the connection
// closed without an answer, so that no client reads an empty answer as
// "nothing there".
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	v := reflect.ValueOf(resp).Elem()
	f := v.FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil
	}
	without := resp.AppendTo(nil)
	f.SetInt(int64(code))
	if bytes.Equal(without, resp.AppendTo(nil)) {
		return nil // the version does not carry the field
	}
	return resp
}
