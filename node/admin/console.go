package admin

import (
	"net/http"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/node/admin/console"
)

// The live web console (package console): the page at "/" and its files
// under /console/, and the JSON only it needs:
//
//	/v1/console/state?since=MS&max_points=N
//	                             the cluster-wide history: every led
//	                             partition's offsets, size and rates, every
//	                             group's offsets and lag, one point a second,
//	                             points newer than MS (unix ms) and each
//	                             series' newest, each series thinned to N
//	                             points when N is given
//	/v1/console/local?since=MS&max_points=N
//	                             this node's part of it, what the node
//	                             answering /v1/console/state asks its peers
//	/v1/console/events           the last membership events this node saw
//
// The page and its files hold no data and need no credential (access.go),
// so that the page can ask for the token; the JSON is guarded like every
// other read.
func (a *API) consoleRoutes(mux *http.ServeMux) {
	c := a.cfg.Console
	if c == nil {
		return
	}
	page := console.Handler()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET "+console.AssetPrefix, page)
	mux.HandleFunc("GET /v1/console/state", func(w http.ResponseWriter, r *http.Request) {
		if q, ok := queryParam(w, r); ok {
			httpjson.Write(w, c.State(r.Context(), q))
		}
	})
	mux.HandleFunc("GET /v1/console/local", func(w http.ResponseWriter, r *http.Request) {
		if q, ok := queryParam(w, r); ok {
			httpjson.Write(w, c.Local(q))
		}
	})
	mux.HandleFunc("GET /v1/console/events", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, c.Events())
	})
}

// queryParam is r's console.Query, or false after answering 400.
func queryParam(w http.ResponseWriter, r *http.Request) (console.Query, bool) {
	q, err := console.ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return q, false
	}
	return q, true
}
