package wire

// ApiVersions (key 18) is answered by wire itself, from Config.Versions, and
// never reaches the Handler: it is the one request whose answer depends only
// on the protocol layer, and the one whose unsupported versions must still be
// answered rather than closing the connection.
//
// Versions: 0–4 can be served (v4 only relaxes a feature-range rule and has
// the v3 layout); v5 adds cluster and node IDs that wire does not know, so it
// is never offered. v3+ is flexible, but its response header is always v0.
//
// A version outside the advertised range gets, as Kafka does since 2.4
// (KIP-511), a v0 body with UNSUPPORTED_VERSION and one ApiKeys entry: the
// ApiVersions range, so the client retries at the highest version it shares.
// A v3+ request whose client software name or version does not match Kafka's
// pattern gets INVALID_REQUEST. No features are advertised: Spool has no
// feature flags to finalize.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsServable is every ApiVersions version wire can answer.
var apiVersionsServable = VersionRange{Min: 0, Max: 4}

// apiVersionsDefault is advertised when Config.Versions has no entry for 18.
var apiVersionsDefault = VersionRange{Min: 0, Max: 3}

// apiVersionsAnswerer builds ApiVersions responses from a fixed table.
type apiVersionsAnswerer struct {
	supported VersionRange
	keys      []kmsg.ApiVersionsResponseApiKey // sorted by key
}

func newAPIVersionsAnswerer(versions map[int16]VersionRange) *apiVersionsAnswerer {
	a := &apiVersionsAnswerer{supported: versions[apiKeyApiVersions]}
	for key, rng := range versions {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, rng.Min, rng.Max
		a.keys = append(a.keys, k)
	}
	sort.Slice(a.keys, func(i, j int) bool { return a.keys[i].ApiKey < a.keys[j].ApiKey })
	return a
}

// answer responds to a request at a supported version.
func (a *apiVersionsAnswerer) answer(req *kmsg.ApiVersionsRequest) Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	if req.Version >= 3 && (!validSoftwareToken(req.ClientSoftwareName) || !validSoftwareToken(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = a.keys
	return resp
}

// unsupportedVersion is the KIP-511 answer to an ApiVersions version outside
// the supported range; it is always encoded as version 0.
func (a *apiVersionsAnswerer) unsupportedVersion() Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = apiKeyApiVersions, a.supported.Min, a.supported.Max
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return fixedVersion{resp: resp, version: 0}
}

// validSoftwareToken matches Kafka's [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareToken(s string) bool {
	if s == "" {
		return false
	}
	alnum := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
