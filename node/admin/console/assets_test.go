package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// maxAssetBytes is the page-weight budget for everything the
// console sends a browser.
const maxAssetBytes = 200 << 10

// TestAssetsWeight: the embedded files total under 200 KiB, and the page
// loads nothing but them (no third-party origin, no inline script, which
// the Content-Security-Policy would refuse anyway).
func TestAssetsWeight(t *testing.T) {
	total := 0
	err := fs.WalkDir(Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), path)
		if err != nil {
			return err
		}
		total += len(b)
		t.Logf("%s: %d bytes", path, len(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total >= maxAssetBytes {
		t.Fatalf("console assets total %d bytes, want between 1 and %d", total, maxAssetBytes)
	}
	index, err := fs.ReadFile(Assets(), "index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)="([^"#]+)"`).FindAllStringSubmatch(string(index), -1) {
		if !strings.HasPrefix(ref[1], AssetPrefix) {
			t.Errorf("index.html loads %s, not one of its own files", ref[1])
			continue
		}
		if _, err := fs.Stat(Assets(), strings.TrimPrefix(ref[1], AssetPrefix)); err != nil {
			t.Errorf("index.html loads %s, which is not embedded", ref[1])
		}
	}
	if regexp.MustCompile(`<script>|<script [^>]*>[^<]`).Match(index) {
		t.Error("index.html has an inline script")
	}
}

// TestHandler: "/" and /console/ serve the page, the files their types, with
// the security headers.
func TestHandler(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{
		"/":                    "text/html",
		"/console/":            "text/html",
		"/console/console.js":  "text/javascript",
		"/console/console.css": "text/css",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), want) || len(body) == 0 {
			t.Errorf("%s: %d %q (%d bytes), want 200 %s", path, rec.Code, rec.Header().Get("Content-Type"), len(body), want)
		}
		if rec.Header().Get("Content-Security-Policy") != contentSecurityPolicy {
			t.Errorf("%s: no Content-Security-Policy", path)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/nothing.js", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/console/nothing.js: %d, want 404", rec.Code)
	}
}
