package coord

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/txn"
)

// ServeHTTP answers peers' posts under admin.TxnPath: the markers a
// remote coordinator has this node write (markerWriter), and the
// verifications a partition's leader asks of this node's coordinator.
func (t *Txns) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, admin.TxnPath) {
	case "marker":
		t.serveMarker(w, r)
	case "verify":
		t.serveVerify(w, r)
	default:
		http.NotFound(w, r)
	}
}

// markerWriteTimeout bounds a posted marker's write.
const markerWriteTimeout = 30 * time.Second

func (t *Txns) serveMarker(w http.ResponseWriter, r *http.Request) {
	var req markerRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), markerWriteTimeout)
	defer cancel()
	var out markerResponse
	err := t.WriteMarkerLocal(ctx, txn.TopicPartition{Topic: req.Topic, Partition: req.Partition}, req.Marker)
	var ke *kerr.Error
	switch {
	case err == nil:
	case errors.Is(err, txn.ErrPartitionGone):
		out.Gone = true
	case errors.Is(err, txn.ErrCoordinatorFenced):
		out.ErrorCode = kerr.TransactionCoordinatorFenced.Code
	case errors.As(err, &ke):
		out.ErrorCode = ke.Code
	default:
		out.Error = err.Error()
	}
	if err != nil {
		t.log.WithError(err).WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition}).Debug("transaction marker not written")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (t *Txns) serveVerify(w http.ResponseWriter, r *http.Request) {
	var req VerifyRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	code := t.verifyLocal(req)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(verifyResponse{ErrorCode: code})
}
