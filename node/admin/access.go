package admin

// Who may call the admin API. Requests that change state (every method
// but GET and HEAD: decommission, quarantine purge, starting a scrub, and
// whatever writes later) and the profiler need a credential: a bearer
// token (Access.Token) or, when the admin API verifies client
// certificates (mTLS), the verified certificate the connection was made
// with. Reads stay open unless Access.TokenForReads, but for the catalog
// peers pull (/internal/membership/, which holds SCRAM keys); /healthz and /readyz
// always do, for probes, and so do the web console's page and files, which
// hold no data: the page asks for the token and sends it with every read. With neither a token nor mTLS configured the API
// is open, as before this existed: the node warns about it at start.

import (
	"net/http"
	"strings"

	"github.com/spool-log/spool/node/admin/console"
)

// Access is the admin API's authorization settings.
type Access struct {
	// Token, when set, is accepted as "Authorization: Bearer <token>".
	Token *Token
	// TokenForReads requires a credential for reads too (peers present
	// the same token to each other, so their pulls keep working).
	TokenForReads bool
	// ClientCerts is true when the admin listener requires and verifies
	// client certificates: a verified one is a credential.
	ClientCerts bool
}

// Open reports whether anyone who reaches the API may change state.
func (a Access) Open() bool { return a.Token == nil && !a.ClientCerts }

// alwaysOpen are the reads no setting closes: liveness and readiness.
var alwaysOpen = map[string]bool{"/healthz": true, "/readyz": true}

// needsCredential reports whether r must carry a credential.
func (a Access) needsCredential(r *http.Request) bool {
	if a.Open() || alwaysOpen[r.URL.Path] {
		return false
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, console.AssetPrefix)) {
		return false // the console's static files (package console)
	}
	if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
		return true // costly and revealing: as privileged as a write
	}
	if strings.HasPrefix(r.URL.Path, "/internal/membership/") {
		// The catalog carries the SCRAM users' salts and keys, enough
		// for an offline guess of a password: for peers (which present
		// the token or their certificate) only.
		return true
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return a.TokenForReads
	}
	return true
}

// refusal is why r may not pass, or "" when it may.
func (a Access) refusal(r *http.Request) string {
	if !a.needsCredential(r) {
		return ""
	}
	if a.ClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return ""
	}
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "this admin endpoint needs a credential: Authorization: Bearer <token> (the node's --admin-token-file; spool's --admin-token-file or SPOOL_ADMIN_TOKEN)"
	}
	scheme, tok, _ := strings.Cut(auth, " ")
	if !strings.EqualFold(scheme, "Bearer") || a.Token == nil || !a.Token.Matches(strings.TrimSpace(tok)) {
		return "the admin token given is not this node's (--admin-token-file)"
	}
	return ""
}

// guard answers 401 to requests Access refuses and passes the others to next.
func (a *API) guard(next http.Handler) http.Handler {
	access := a.cfg.Access
	if access.Open() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := access.refusal(r); why != "" {
			a.cfg.Log.WithField("method", r.Method).WithField("path", r.URL.Path).
				WithField("remote", r.RemoteAddr).Warn("admin request refused: no valid credential")
			w.Header().Set("WWW-Authenticate", `Bearer realm="spool-admin"`)
			http.Error(w, why, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
