package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// assets are the page's files, served under AssetPrefix; index.html also at "/".
//
//go:embed assets
var assets embed.FS

// AssetPrefix is where the page's files are served.
const AssetPrefix = "/console/"

// Assets is the embedded file tree (for tests and for the size check).
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed directive guarantees the directory
	}
	return sub
}

// contentSecurityPolicy lets the page load only its own files and talk only
// to the node that served it: no inline script, no third-party origin, no
// framing (the console shows cluster state; nobody should overlay it).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Handler serves index.html at "/" and the assets under AssetPrefix.
func Handler() http.Handler {
	files := http.FileServerFS(Assets())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The files change with the binary only; revalidating costs a 304.
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			http.ServeFileFS(w, r, Assets(), "index.html")
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, AssetPrefix)
		if r2.URL.Path == "/" || r2.URL.Path == "/index.html" {
			// FileServer would redirect index.html to the directory.
			http.ServeFileFS(w, r, Assets(), "index.html")
			return
		}
		files.ServeHTTP(w, r2)
	})
}
