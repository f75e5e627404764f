package admin

import (
	"net/http"
	"strconv"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/node/admin/console"
)

// The live web console (package console): the page at "/" and its files
// under /console/, and the JSON only it needs:
//
//	/v1/console/state?since=MS   the cluster-wide history: every led
//	                             partition's offsets, size and rates, every
//	                             group's offsets and lag, one point a second,
//	                             points newer than MS (unix ms) and each
//	                             series' newest
//	/v1/console/local?since=MS   this node's part of it, what the node
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
		since, ok := sinceParam(w, r)
		if ok {
			httpjson.Write(w, c.State(r.Context(), since))
		}
	})
	mux.HandleFunc("GET /v1/console/local", func(w http.ResponseWriter, r *http.Request) {
		since, ok := sinceParam(w, r)
		if ok {
			httpjson.Write(w, c.Local(since))
		}
	})
	mux.HandleFunc("GET /v1/console/events", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, c.Events())
	})
}

// sinceParam is the ?since= of r (0 when absent), or false after answering
// 400.
func sinceParam(w http.ResponseWriter, r *http.Request) (int64, bool) {
	s := r.URL.Query().Get("since")
	if s == "" {
		return 0, true
	}
	since, err := strconv.ParseInt(s, 10, 64)
	if err != nil || since < 0 {
		http.Error(w, "since: want unix milliseconds", http.StatusBadRequest)
		return 0, false
	}
	return since, true
}
