package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
)

// The cluster commands (members, placement, decommission) talk to a node's
// admin HTTP API, at --admin (SPOOL_ADMIN).

// maxAdminBody bounds a reply read from the admin API.
const maxAdminBody = 64 << 20

// adminURL is the full URL of path on the --admin node.
func (g *globals) adminURL(path string) (string, error) {
	addr := strings.TrimSpace(g.adminAddr)
	if addr == "" {
		return "", errors.New("no admin address given (set --admin or SPOOL_ADMIN)")
	}
	addr = strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
	return "http://" + addr + path, nil
}

// adminDo sends one request to the admin API. Within --timeout unless
// stream is set (a watch runs until ctx ends); a node that does not answer
// is a clear error, and a non-2xx status returns the node's message.
func (g *globals) adminDo(ctx context.Context, method, path string, stream bool) (*http.Response, context.CancelFunc, error) {
	url, err := g.adminURL(path)
	if err != nil {
		return nil, nil, err
	}
	var cancel context.CancelFunc
	if stream {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("admin request %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		cancel()
		return nil, nil, fmt.Errorf("nothing listens at %s (connection refused): is `spool node` running with that --admin-addr? (set --admin or SPOOL_ADMIN)", g.adminAddr)
	}
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("no Spool node answered at %s within %v: is `spool node` running with that --admin-addr? (set --admin or SPOOL_ADMIN): %w", g.adminAddr, g.timeout, err)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, nil, adminError(g.adminAddr, resp.Status, body)
	}
	return resp, cancel, nil
}

// adminJSON sends a request and decodes the JSON reply into v.
func (g *globals) adminJSON(ctx context.Context, method, path string, v any) error {
	resp, cancel, err := g.adminDo(ctx, method, path, false)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAdminBody)).Decode(v); err != nil {
		return fmt.Errorf("decode reply of %s from %s: %w", path, g.adminAddr, err)
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
