package replication

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
)

// A damaged replica of a replicated partition is rebuilt from its peers
// (node/hosted's repair.go); before it throws its log away it asks its
// leader whether the rest of the group holds everything committed
// (replica.CaughtUpWithout), over the leader's admin listener as snapshot
// copies travel: ServeCaughtUp answers, AskCaughtUp asks.

// maxCaughtUpBody bounds the leader's answer.
const maxCaughtUpBody = 4096

// ServeCaughtUp answers a replica's AskCaughtUp (admin.ReplicaCaughtUpPath).
func (rp *Replication) ServeCaughtUp(w http.ResponseWriter, r *http.Request) {
	k, err := parseGroupKey(r.URL.Query().Get("group"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	without, err := strconv.ParseInt(r.URL.Query().Get("without"), 10, 32)
	if err != nil || without < 0 {
		http.Error(w, "without: want a broker id", http.StatusBadRequest)
		return
	}
	if rp.driver == nil {
		http.Error(w, "replication is not running", http.StatusServiceUnavailable)
		return
	}
	cu, err := rp.driver.CaughtUpWithout(k, int32(without), r.URL.Query().Get("rebuild") == "1")
	if errors.Is(err, replica.ErrNotHosted) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	httpjson.Write(w, cu)
}

// AskCaughtUp asks broker leader, leading p's group, CaughtUpWithout this
// node (hosted.RepairConfig.Ask).
func (rp *Replication) AskCaughtUp(ctx context.Context, p *hosted.Partition, leader int32, rebuild bool) (replica.CaughtUp, error) {
	var cu replica.CaughtUp
	a := rp.agentOrNil()
	if a == nil {
		return cu, errors.New("membership is not running")
	}
	m, ok := a.LiveBrokers()[leader]
	if !ok || m.AdminAddr == "" {
		return cu, fmt.Errorf("broker %d: no admin address known", leader)
	}
	k := replica.GroupKey{Topic: p.TopicID, Partition: p.Index}
	q := url.Values{"group": {k.String()}, "without": {strconv.Itoa(int(rp.cfg.NodeID))}}
	if rebuild {
		q.Set("rebuild", "1")
	}
	if err := rp.cfg.Peers.GetJSON(ctx, m.AdminAddr, admin.ReplicaCaughtUpPath, q, maxCaughtUpBody, &cu); err != nil {
		return cu, fmt.Errorf("broker %d: %w", leader, err)
	}
	return cu, nil
}
