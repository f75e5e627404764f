package wire

import (
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded client request, handed to the Handler in the order
// the connection sent it.
type Request struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string // nil when the client sent a null client ID

	// Body is the request decoded by kmsg, its version already set. Byte
	// fields alias the request's frame buffer. A Produce request's buffer
	// is pooled: wire reuses it once the Handler has returned and the
	// response has been written, so a Handler must copy whatever bytes of a
	// Produce request (records, tagged fields) it keeps beyond that, and
	// must not hand them to a goroutine that outlives the call. Other
	// requests' buffers are never reused, so their byte fields (group
	// member metadata and assignments, ...) may be kept.
	Body kmsg.Request

	// RawSASL is the token of an APIKeyRawSASL request (Body is nil);
	// see StartRawSASL.
	RawSASL []byte

	RemoteAddr net.Addr

	// DecodeTime is how long the reader took to decode the request's
	// frame (not to read it off the socket, which is waiting): part of
	// the request's cost outside the Handler, which request quotas count
	// as Kafka counts its network threads' time.
	DecodeTime time.Duration
}

// inbound is a decoded frame on its way from the reader to the dispatcher.
type inbound struct {
	req *Request
	// answer, when set, is wire's own response (ApiVersions); the Handler
	// does not see the request.
	answer Response
	// size is the frame's length, returned to the read-ahead budget once
	// the request has been handled.
	size int32
	// buf, when set, is the pooled frame buffer the request aliases, given
	// back to pool once the request has been answered.
	buf  *frameBuffer
	pool *framePool
	// charge is what the frame holds in the server's byte budget, given
	// back once the request has been answered or dropped.
	charge frameCharge
}

// decoder turns frames into requests under the server's version table.
type decoder struct {
	versions    map[int16]VersionRange
	apiVersions *apiVersionsAnswerer
}

// unsupportedError reports an API key or version outside the version table;
// Kafka closes the connection on these (only ApiVersions gets an answer).
type unsupportedError struct {
	key, version int16
	known        bool // whether the key is in the table at all
	supported    VersionRange
}

func (e *unsupportedError) Error() string {
	name := kmsg.NameForKey(e.key)
	if name == "" {
		name = "unknown"
	}
	if !e.known {
		return fmt.Sprintf("API key %d (%s) is not supported", e.key, name)
	}
	return fmt.Sprintf("API key %d (%s) version %d is outside the supported %d-%d",
		e.key, name, e.version, e.supported.Min, e.supported.Max)
}

// decode parses one frame: header, then the body with kmsg. An error means
// the connection must be closed.
func (d *decoder) decode(frame []byte, remote net.Addr) (inbound, error) {
	in := inbound{size: int32(len(frame))}
	r := fieldReader{src: frame}
	h := readRequestHeaderPrefix(&r)
	if r.err != nil {
		return in, fmt.Errorf("request header: %w", r.err)
	}

	if h.apiKey == apiKeyApiVersions && !d.apiVersions.supported.Contains(h.apiVersion) {
		// KIP-511: a version this broker does not know is answered, not
		// parsed: the body (and whether the header is flexible) is unknown.
		// The client ID comes before any header tags, so it is still read.
		h.clientID = r.nullableString()
		in.req = &Request{APIKey: h.apiKey, APIVersion: h.apiVersion, CorrelationID: h.correlationID, ClientID: h.clientID, RemoteAddr: remote}
		in.answer = d.apiVersions.unsupportedVersion()
		return in, nil
	}

	body := kmsg.RequestForKey(h.apiKey)
	rng, known := d.versions[h.apiKey]
	if body == nil || !known || !rng.Contains(h.apiVersion) {
		return in, &unsupportedError{key: h.apiKey, version: h.apiVersion, known: body != nil && known, supported: rng}
	}
	body.SetVersion(h.apiVersion)
	if err := readRequestHeaderRest(&r, &h, body.IsFlexible()); err != nil {
		return in, err
	}
	if err := body.ReadFrom(r.src); err != nil {
		return in, fmt.Errorf("decode %s v%d body: %w", kmsg.NameForKey(h.apiKey), h.apiVersion, err)
	}
	in.req = &Request{
		APIKey:        h.apiKey,
		APIVersion:    h.apiVersion,
		CorrelationID: h.correlationID,
		ClientID:      h.clientID,
		Body:          body,
		RemoteAddr:    remote,
	}
	if av, ok := body.(*kmsg.ApiVersionsRequest); ok {
		in.answer = d.apiVersions.answer(av)
	}
	return in, nil
}
