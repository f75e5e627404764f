// Package peers is the inter-broker client of the admin listeners: the calls
// one broker makes to another's admin HTTP API for replica snapshots (a
// stream that takes as long as the copy does), transaction markers and
// verifications (forwarded to the broker that leads what they are about:
// PostToBroker), and the moves a leader runs. It owns one http.Client, the
// scheme (HTTP, or HTTPS when the node's admin API is TLS) and the bearer
// token the peers ask for; it knows no paths' meaning.
//
// It holds no lock.
package peers

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls other brokers' admin APIs.
type Client struct {
	http   *http.Client
	scheme string
}

// New is a client over plain HTTP, or HTTPS with tlsCfg when it is set;
// wrap, if set, adds what every request carries (the admin token). There is
// no overall timeout, since a snapshot copy of a large compacted log takes
// as long as it takes, but the wait for a connection and for an answer to
// start are bounded; callers bound the rest with their context.
func New(tlsCfg *tls.Config, wrap func(*http.Client) *http.Client) *Client {
	c := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       time.Minute,
	}}
	if wrap != nil {
		c = wrap(c)
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	return &Client{http: c, scheme: scheme}
}

// Open GETs path?query from the admin API at addr and returns the body of a
// 200 answer, for the caller to read and close; any other answer is an
// error naming its status and the start of its body.
func (c *Client) Open(ctx context.Context, addr, path string, query url.Values) (io.ReadCloser, error) {
	u := url.URL{Scheme: c.scheme, Host: addr, Path: path, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	return c.do(req, addr)
}

// GetJSON GETs path?query from addr and decodes a 200 answer's JSON, at
// most limit bytes of it, into out.
func (c *Client) GetJSON(ctx context.Context, addr, path string, query url.Values, limit int64, out any) error {
	body, err := c.Open(ctx, addr, path, query)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := json.NewDecoder(io.LimitReader(body, limit)).Decode(out); err != nil {
		return fmt.Errorf("%s%s: %w", addr, path, err)
	}
	return nil
}

// PostJSON posts body (JSON) to path at addr and decodes a 200 answer's
// JSON, at most limit bytes of it, into out.
func (c *Client) PostJSON(ctx context.Context, addr, path string, body []byte, limit int64, out any) error {
	u := url.URL{Scheme: c.scheme, Host: addr, Path: path}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	rc, err := c.do(req, addr)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := json.NewDecoder(io.LimitReader(rc, limit)).Decode(out); err != nil {
		return fmt.Errorf("%s%s: %w", addr, path, err)
	}
	return nil
}

func (c *Client) do(req *http.Request, addr string) (io.ReadCloser, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if m := strings.TrimSpace(string(msg)); m != "" {
			return nil, fmt.Errorf("%s answered %s: %s", addr, resp.Status, m)
		}
		return nil, fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	return resp.Body, nil
}
