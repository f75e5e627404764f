package admin

// The admin API's bearer token: read from a file (never a flag, never
// logged), re-read on Node.Reload (SIGHUP), compared in constant time, and
// presented by the node to its peers' admin APIs (BearerTransport), so
// that every node of a cluster shares one token file.

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

// Token is a reloadable bearer token read from a file.
type Token struct {
	file    string
	current atomic.Pointer[string]
}

// LoadToken reads the token in file: its content with surrounding
// whitespace (a trailing newline) removed; an empty token is refused.
func LoadToken(file string) (*Token, error) {
	t := &Token{file: file}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the file again; on error the previous token stays.
func (t *Token) Reload() error {
	raw, err := os.ReadFile(t.file)
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	tok := strings.TrimSpace(string(raw))
	if tok == "" {
		return fmt.Errorf("admin token file %s is empty", t.file)
	}
	if strings.ContainsAny(tok, "\r\n") {
		return errors.New("admin token: the file holds more than one line")
	}
	t.current.Store(&tok)
	return nil
}

// Value is the token, for requests to peers.
func (t *Token) Value() string { return *t.current.Load() }

// Matches reports whether presented is the token, in time independent of
// where they differ and of their lengths (both are hashed first).
func (t *Token) Matches(presented string) bool {
	want := sha256.Sum256([]byte(t.Value()))
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// BearerTransport sends every request through Base (http.DefaultTransport
// when nil) with "Authorization: Bearer <token>", the token as it is at
// the time of the request.
type BearerTransport struct {
	Base  http.RoundTripper
	Token *Token
}

// RoundTrip implements http.RoundTripper.
func (b BearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := b.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token.Value())
	return base.RoundTrip(r)
}
