package wire

import (
	"encoding/binary"
	"fmt"
)

// Request header versions (KIP-482):
//
//	v0: api_key, api_version, correlation_id (only ControlledShutdown v0)
//	v1: v0 + client_id (NULLABLE_STRING)
//	v2: v1 + tagged fields, for requests at a flexible version
//
// The client ID stays a non-compact NULLABLE_STRING even in v2, so that a
// broker can read it before it knows whether the version is flexible.
//
// Response header versions: v0 is correlation_id; v1 adds tagged fields and
// is used for flexible responses, except ApiVersions, which always uses v0 so
// that a client can read the error of a version the broker does not know.

// requestHeader is the part of a request before its body.
type requestHeader struct {
	apiKey        int16
	apiVersion    int16
	correlationID int32
	clientID      *string
}

const (
	apiKeyControlledShutdown = 7
	apiKeyApiVersions        = 18
)

// readRequestHeaderPrefix reads the fields common to every header version
// that come before the client ID.
func readRequestHeaderPrefix(r *fieldReader) requestHeader {
	return requestHeader{
		apiKey:        r.int16(),
		apiVersion:    r.int16(),
		correlationID: r.int32(),
	}
}

// readRequestHeaderRest reads the client ID and, for a flexible request, the
// header's tagged fields, leaving r at the body.
func readRequestHeaderRest(r *fieldReader, h *requestHeader, flexible bool) error {
	if h.apiKey == apiKeyControlledShutdown && h.apiVersion == 0 {
		return r.err // header v0: no client ID
	}
	h.clientID = r.nullableString()
	if flexible {
		r.skipTags()
	}
	if r.err != nil {
		return fmt.Errorf("request header (key %d, version %d): %w", h.apiKey, h.apiVersion, r.err)
	}
	return nil
}

// appendResponseHeader starts a response frame: a size placeholder (filled by
// finishFrame), the correlation ID and, for header v1, empty tagged fields.
func appendResponseHeader(dst []byte, correlationID int32, flexibleHeader bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = appendInt32(dst, correlationID)
	if flexibleHeader {
		dst = appendEmptyTags(dst)
	}
	return dst
}

// finishFrame writes the size prefix of a frame that starts at frame[0] and
// is wholly in the slice.
func finishFrame(frame []byte) { putFrameSize(frame, int32(len(frame)-4)) }

// putFrameSize writes a frame's size prefix.
func putFrameSize(frame []byte, size int32) {
	binary.BigEndian.PutUint32(frame[:4], uint32(size))
}
