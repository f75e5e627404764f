package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("no Spool node answered at %s within %v: is `spool node` running with that --admin-addr? (set --admin or SPOOL_ADMIN): %w", g.adminAddr, g.timeout, err)
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(body)))
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
