package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/spool-log/spool/adminapi"
)

// The cluster operations (members, placement, quarantine, scrub,
// decommission) talk to a node's admin HTTP API, at Config.AdminAddr.

// maxAdminBody bounds a reply read from the admin API.
const maxAdminBody = 64 << 20

// adminURL is the full URL of path on the AdminAddr node.
func (g Config) adminURL(path string) (string, error) {
	addr := strings.TrimSpace(g.AdminAddr)
	if addr == "" {
		return "", errors.New("no admin address given (set --admin or SPOOL_ADMIN)")
	}
	scheme := "http"
	if rest, ok := strings.CutPrefix(addr, "https://"); ok {
		scheme, addr = "https", rest
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
	return scheme + "://" + addr + path, nil
}

// adminDo sends one request to the admin API. Within --timeout unless
// stream is set (a watch runs until ctx ends); a node that does not answer
// is a clear error, and a non-2xx status returns the node's message.
func (g Config) adminDo(ctx context.Context, method, path string, stream bool) (*http.Response, context.CancelFunc, error) {
	return g.adminDoBody(ctx, method, path, nil, stream)
}

// adminDoBody is adminDo with a JSON request body (nil: none).
func (g Config) adminDoBody(ctx context.Context, method, path string, body []byte, stream bool) (*http.Response, context.CancelFunc, error) {
	url, err := g.adminURL(path)
	if err != nil {
		return nil, nil, err
	}
	var cancel context.CancelFunc
	if stream {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("admin request %s: %w", url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+g.AdminToken)
	}
	resp, err := g.httpClient().Do(req)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		cancel()
		return nil, nil, fmt.Errorf("nothing listens at %s (connection refused): is `spool node` running with that --admin-addr? (set --admin or SPOOL_ADMIN)", g.AdminAddr)
	}
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("no Spool node answered at %s within %v: is `spool node` running with that --admin-addr? (set --admin or SPOOL_ADMIN): %w", g.AdminAddr, g.Timeout, err)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, nil, adminError(g.AdminAddr, resp.Status, body)
	}
	return resp, cancel, nil
}

// adminJSON sends a request and decodes the JSON reply into v.
func (g Config) adminJSON(ctx context.Context, method, path string, v any) error {
	return g.adminJSONBody(ctx, method, path, nil, v)
}

// adminJSONBody is adminJSON with a JSON request body.
func (g Config) adminJSONBody(ctx context.Context, method, path string, body []byte, v any) error {
	resp, cancel, err := g.adminDoBody(ctx, method, path, body, false)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAdminBody)).Decode(v); err != nil {
		return fmt.Errorf("decode reply of %s from %s: %w", path, g.AdminAddr, err)
	}
	return nil
}

// adminError is a refusal of the admin API as one line: the node's message,
// then where it came from.
func adminError(addr, status string, body []byte) error {
	msg := strings.Join(strings.Fields(string(body)), " ")
	if strings.HasPrefix(msg, "<") { // not the admin API's plain text
		msg = "an answer that is not Spool's (is --admin the node's --admin-addr?)"
	}
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	if msg == "" {
		msg = status
	}
	return fmt.Errorf("%s (%s from the admin API at %s)", msg, status, addr)
}

// Members is the cluster's members as the AdminAddr node's gossip sees them.
func (g Config) Members(ctx context.Context) (Members, error) {
	var members Members
	return members, g.adminJSON(ctx, "GET", "/v1/members", &members)
}

// Placement is, per partition of topic (every topic when ""), its replicas,
// leader and the replicas rendezvous hashing prefers today.
func (g Config) Placement(ctx context.Context, topic string) (Placements, error) {
	path := "/v1/placement"
	if topic != "" {
		path += "?topic=" + url.QueryEscape(topic)
	}
	var parts Placements
	return parts, g.adminJSON(ctx, "GET", path, &parts)
}

// Quarantine is what the AdminAddr node set aside instead of deleting it,
// oldest first.
func (g Config) Quarantine(ctx context.Context) (QuarantineEntries, error) {
	var entries QuarantineEntries
	return entries, g.adminJSON(ctx, "GET", "/v1/quarantine", &entries)
}

// PurgeQuarantine deletes quarantined entries for good (those older than
// olderThan, or all when it is 0) and returns them.
func (g Config) PurgeQuarantine(ctx context.Context, olderThan time.Duration) (QuarantineEntries, error) {
	if olderThan < 0 {
		return nil, fmt.Errorf("--older-than %v: want a non-negative duration", olderThan)
	}
	path := "/v1/quarantine/purge"
	if olderThan > 0 {
		path += "?older_than=" + url.QueryEscape(olderThan.String())
	}
	var purged QuarantineEntries
	return purged, g.adminJSON(ctx, "POST", path, &purged)
}

// Scrub is the state of the node's CRC scrub; start asks for a pass now.
func (g Config) Scrub(ctx context.Context, start bool) (adminapi.ScrubStatus, error) {
	method := "GET"
	if start {
		method = "POST"
	}
	var st adminapi.ScrubStatus
	return st, g.adminJSON(ctx, method, "/v1/scrub", &st)
}

// httpClient is the admin API's client: with Config.AdminTLS (its CA, its
// client certificate) for an https:// admin address.
func (g Config) httpClient() *http.Client {
	if g.AdminTLS == nil {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: g.AdminTLS.Clone()}}
}
