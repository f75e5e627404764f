package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/membership"
)

// The moves under way, and pausing them (node/moves: status.go,
// pause.go):
//
//	GET  /v1/rebalance          every move in the catalog, with the progress its
//	                            partition's leader reports (?local=1: only the
//	                            moves of partitions this node leads, what the
//	                            node asking its peers reads)
//	POST /v1/rebalance/pause    pauses moves cluster-wide (a catalog setting)
//	POST /v1/rebalance/resume   resumes them

// Move steps, as MoveProgress.Step names them (adminapi's).
const (
	StepAddingLearner = adminapi.StepAddingLearner
	StepCatchingUp    = adminapi.StepCatchingUp
	StepPromoting     = adminapi.StepPromoting
	StepHandingOff    = adminapi.StepHandingOff
	StepRemoving      = adminapi.StepRemoving
	StepUnknown       = adminapi.StepUnknown
)

// The body of /v1/rebalance, which package adminapi defines for the
// client too.
type (
	RebalanceStatus = adminapi.RebalanceStatus
	MoveProgress    = adminapi.MoveProgress
	ReplicaProgress = adminapi.ReplicaProgress
)

// Rebalancer is what the rebalance routes ask of the node.
type Rebalancer interface {
	RebalanceStatus(ctx context.Context, local bool) RebalanceStatus
	SetRebalancePaused(paused bool) error
}

func (a *API) rebalanceRoutes(mux *http.ServeMux) {
	rb := a.cfg.Rebalance
	if rb == nil {
		return
	}
	mux.HandleFunc("GET /v1/rebalance", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, rb.RebalanceStatus(r.Context(), r.URL.Query().Get("local") == "1"))
	})
	for path, paused := range map[string]bool{"POST /v1/rebalance/pause": true, "POST /v1/rebalance/resume": false} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			switch err := rb.SetRebalancePaused(paused); {
			case errors.Is(err, membership.ErrNotDurable):
				http.Error(w, err.Error(), http.StatusInsufficientStorage)
			case errors.Is(err, membership.ErrMixedVersions):
				http.Error(w, err.Error(), http.StatusConflict)
			case err != nil:
				http.Error(w, err.Error(), http.StatusInternalServerError)
			default:
				a.cfg.Log.WithField("paused", paused).Warn("rebalancing paused or resumed through the admin API")
				httpjson.Write(w, rb.RebalanceStatus(r.Context(), false))
			}
		})
	}
}
