package wire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Response is what a Handler returns for a Request. It is one of:
//
//   - a kmsg.Response of the request's API key: wire sets its version to the
//     request's and encodes it, with response header v1 (tagged fields) for
//     flexible versions;
//   - a *FetchResponse, for Fetch requests: encoded by hand, records sent
//     with sendfile(2);
//   - NoResponse: nothing is written. A Produce with acks=0 is never
//     answered whatever the Handler returns (Kafka's clients do not read
//     one), except that CloseConnection still closes;
//   - CloseConnection: the connection is closed once the responses to
//     earlier requests are written (Kafka does this when an acks=0 Produce
//     fails, so the client notices and refreshes its metadata);
//   - ThenClose(resp): resp is written, then the connection is closed (a
//     failed SASL authentication, a request before authentication).
//
// wire sets the version of a returned kmsg.Response, so a response value must
// not be shared between requests. Anything else, including nil, is a handler
// bug: wire logs it and closes the connection, since the client would
// otherwise wait forever for an answer.
type Response any

type noResponse struct{}

type closeConnection struct{}

// NoResponse tells wire to write nothing for the request.
var NoResponse Response = noResponse{}

// CloseConnection tells wire to close the connection after the responses to
// earlier requests have been written.
var CloseConnection Response = closeConnection{}

// thenClose is a response after which the connection is closed.
type thenClose struct{ resp kmsg.Response }

// ThenClose tells wire to write resp, then close the connection: the
// client reads Kafka's error, and the connection serves nothing more.
func ThenClose(resp kmsg.Response) Response { return thenClose{resp} }

// Handler serves decoded requests. ServeKafka is called for one connection's
// requests one at a time, in the order they arrived; different connections
// are served concurrently. ctx is cancelled when the connection closes
// (client gone, protocol error, or Shutdown's deadline passing), so a long
// poll should select on it.
type Handler interface {
	ServeKafka(ctx context.Context, req *Request) Response
}

// WriteObserver is what a Handler may also be to learn how long each of
// its responses took to encode (a Fetch response's header and framing;
// its file regions are sent by sendfile). The write itself, a copy into
// the socket's buffer, is not timed: on the clock it would count the wait
// for a core after the syscall, up to the Go scheduler's 10 ms slice on a
// busy machine, which dwarfs the copy. It is called after the write,
// before any mute, on the connection's worker: it must be quick.
type WriteObserver interface {
	ResponseWritten(ctx context.Context, req *Request, encoding time.Duration)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, req *Request) Response

// ServeKafka calls f.
func (f HandlerFunc) ServeKafka(ctx context.Context, req *Request) Response { return f(ctx, req) }

// fixedVersion is a kmsg response encoded at its own version rather than the
// request's: the UNSUPPORTED_VERSION answer to ApiVersions is always v0.
type fixedVersion struct {
	resp    kmsg.Response
	version int16
}

// errCloseRequested ends a connection on the handler's CloseConnection.
var errCloseRequested = errors.New("handler asked to close the connection")

// appendKmsgResponse appends a whole response frame (size, header, body).
func appendKmsgResponse(dst []byte, req *Request, resp kmsg.Response, version int16) ([]byte, error) {
	if resp.Key() != req.APIKey {
		return dst, fmt.Errorf("handler answered %s request with a %s response",
			kmsg.NameForKey(req.APIKey), kmsg.NameForKey(resp.Key()))
	}
	resp.SetVersion(version)
	start := len(dst)
	dst = appendResponseHeader(dst, req.CorrelationID, resp.IsFlexible() && resp.Key() != apiKeyApiVersions)
	dst = resp.AppendTo(dst)
	if len(dst)-start-4 > maxFrameSize {
		return dst[:start], fmt.Errorf("%s response of %d bytes does not fit a frame", kmsg.NameForKey(req.APIKey), len(dst)-start)
	}
	finishFrame(dst[start:])
	return dst, nil
}

// maxFrameSize is the largest size an INT32 prefix can state.
const maxFrameSize = 1<<31 - 1
