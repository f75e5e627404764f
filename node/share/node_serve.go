package share

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sirupsen/logrus"
)

// ServeState answers peers' forwarded state requests (under the path
// NewNode was given) on the leader of the share partition's StateTopic
// partition, and the offsets operations (OnLeader) on the share
// partition's leader.
func (n *Node) ServeState(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, n.path)
	var req stateRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxStateBody)).Decode(&req); err != nil ||
		(op != "claim" && op != "write" && op != "read" && op != "forget" && op != OpReset && op != OpDelete) {
		http.Error(w, fmt.Sprintf("bad share state request %q: %v", op, err), http.StatusBadRequest)
		return
	}
	k := Key{Group: req.Group, TopicPartition: TopicPartition{TopicID: req.TopicID, Partition: req.Partition}}
	var out stateResponse
	if op == OpReset || op == OpDelete { // on the share partition's leader
		out.ErrorCode = n.onLeaderLocal(op, k, req.StartOffset)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	st, leader, err := n.localStore(k)
	if err == nil && st == nil {
		err = fmt.Errorf("broker %d leads the state partition, not this one", leader)
	}
	if err == nil {
		switch op {
		case "claim":
			var snap Snapshot
			if snap, out.Found, err = st.Claim(k, req.Epoch); err == nil && out.Found {
				out.Snapshot = snap.Encode()
			}
		case "write":
			var snap Snapshot
			if snap, err = DecodeSnapshot(req.Snapshot); err == nil {
				err = st.Write(k, snap)
			}
		case "read":
			var snap Snapshot
			if snap, out.Found, err = st.Read(k); err == nil && out.Found {
				out.Snapshot = snap.Encode()
			}
		case "forget":
			err = st.Forget(k)
		}
	}
	if errors.Is(err, ErrFenced) {
		out.Fenced = true
	} else if err != nil {
		out.Error = err.Error()
	}
	if err != nil {
		n.log.WithError(err).WithFields(logrus.Fields{"group": req.Group, "partition": req.Partition, "op": op}).Debug("share state request refused")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
