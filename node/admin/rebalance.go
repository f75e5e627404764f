package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/membership"
)

// The moves under way, and pausing them (node/rebalance_status.go,
// node/rebalance_pause.go):
//
//	GET  /v1/rebalance          every move in the catalog, with the progress its
//	                            partition's leader reports (?local=1: only the
//	                            moves of partitions this node leads, what the
//	                            node asking its peers reads)
//	POST /v1/rebalance/pause    pauses moves cluster-wide (a catalog setting)
//	POST /v1/rebalance/resume   resumes them

// Move steps, as MoveProgress.Step names them.
const (
	StepAddingLearner = "adding learner"
	StepCatchingUp    = "catching up"
	StepPromoting     = "promoting"
	StepHandingOff    = "handing off leadership"
	StepRemoving      = "removing"
	StepUnknown       = "unknown" // the leader is down, unknown or did not answer
)

// RebalanceStatus is the moves under way, cluster-wide.
type RebalanceStatus struct {
	Paused bool           `json:"paused"`
	Moves  []MoveProgress `json:"moves"`
	// BytesToCopy sums the moves' BytesToCopy, BytesCopied their
	// BytesCopied (moves whose leader is unknown count for nothing).
	BytesToCopy int64 `json:"bytes_to_copy"`
	BytesCopied int64 `json:"bytes_copied"`
}

// MoveProgress is one partition's move.
type MoveProgress struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"` // the list the move started from
	Target    []int32 `json:"target"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	// Leader is the partition's leader as this node knows it (-1: none).
	Leader int32 `json:"leader"`
	// Step is where the leader stands in the move (Step*).
	Step string `json:"step"`
	// StartedMs is when the move was recorded (Unix ms; 0: unknown).
	StartedMs int64 `json:"started_ms,omitempty"`
	// BytesToCopy is the leader's log in bytes times the replicas being
	// added; BytesCopied what of it they hold, from the offsets the leader
	// has matched on each (bytes in proportion to offsets).
	BytesToCopy int64             `json:"bytes_to_copy"`
	BytesCopied int64             `json:"bytes_copied"`
	NewReplicas []ReplicaProgress `json:"new_replicas,omitempty"`
	// Error says why the progress is unknown.
	Error string `json:"error,omitempty"`
}

// ReplicaProgress is one new replica, as the leader sees it.
type ReplicaProgress struct {
	Broker int32 `json:"broker"`
	// Offset is the offset after the last record the leader matched on it,
	// of EndOffset, the leader's log end.
	Offset    int64 `json:"offset"`
	EndOffset int64 `json:"end_offset"`
	Bytes     int64 `json:"bytes"`
	Snapshot  bool  `json:"snapshot,omitempty"` // receiving the leader's snapshot
	CaughtUp  bool  `json:"caught_up,omitempty"`
}

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
