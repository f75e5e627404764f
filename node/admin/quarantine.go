package admin

import (
	"net/http"
	"time"

	"github.com/spool-log/spool/internal/httpjson"
)

// quarantineRoutes serves the quarantine (node/datadir):
//
//	GET  /v1/quarantine                          JSON entries, oldest first
//	POST /v1/quarantine/purge[?older_than=DUR]   deletes the entries dropped
//	                                             at least DUR ago (all without
//	                                             it) and returns them
func (a *API) quarantineRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/quarantine", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "use GET", http.StatusMethodNotAllowed)
			return
		}
		entries, err := a.cfg.Quarantine.List()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		httpjson.Write(w, entries)
	})
	mux.HandleFunc("/v1/quarantine/purge", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		var olderThan time.Duration
		if s := r.URL.Query().Get("older_than"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				http.Error(w, "older_than: want a non-negative duration such as 24h", http.StatusBadRequest)
				return
			}
			olderThan = d
		}
		purged, err := a.cfg.Quarantine.Purge(olderThan)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		httpjson.Write(w, purged)
	})
}
