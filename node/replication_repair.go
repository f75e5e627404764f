package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
)

// A damaged replica of a replicated partition is rebuilt from its peers
// (node/hosted's repair.go); before it throws its log away it asks its
// leader whether the rest of the group holds everything committed
// (replica.CaughtUpWithout), over the leader's admin listener as snapshot
// copies travel: serveReplicaCaughtUp answers, askCaughtUp asks.

// maxCaughtUpBody bounds the leader's answer.
const maxCaughtUpBody = 4096

func (n *Node) serveReplicaCaughtUp(w http.ResponseWriter, r *http.Request) {
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
	if n.raft == nil {
		http.Error(w, "replication is not running", http.StatusServiceUnavailable)
		return
	}
	cu, err := n.raft.CaughtUpWithout(k, int32(without), r.URL.Query().Get("rebuild") == "1")
	if errors.Is(err, replica.ErrNotHosted) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	httpjson.Write(w, cu)
}

// askCaughtUp asks broker leader, leading p's group, CaughtUpWithout this
// node (hosted.RepairConfig.Ask).
func (n *Node) askCaughtUp(ctx context.Context, p *hosted.Partition, leader int32, rebuild bool) (replica.CaughtUp, error) {
	var cu replica.CaughtUp
	if n.agent == nil {
		return cu, errors.New("membership is not running")
	}
	m, ok := n.agent.LiveBrokers()[leader]
	if !ok || m.AdminAddr == "" {
		return cu, fmt.Errorf("broker %d: no admin address known", leader)
	}
	k := replica.GroupKey{Topic: p.TopicID, Partition: p.Index}
	q := url.Values{"group": {k.String()}, "without": {strconv.Itoa(int(n.cfg.NodeID))}}
	if rebuild {
		q.Set("rebuild", "1")
	}
	if err := n.peers.GetJSON(ctx, m.AdminAddr, admin.ReplicaCaughtUpPath, q, maxCaughtUpBody, &cu); err != nil {
		return cu, fmt.Errorf("broker %d: %w", leader, err)
	}
	return cu, nil
}

// repairConfig is how the node's partition set rebuilds damaged replicas;
// built before the quarantine and the scrubber, so it reaches them late.
func (n *Node) repairConfig() *hosted.RepairConfig {
	return &hosted.RepairConfig{
		Ask: n.askCaughtUp,
		SetAside: func(dir, why string, fields logrus.Fields) (string, error) {
			return n.quarantine.Move(dir, why, fields)
		},
		Report: func(r hosted.Repair) { n.scrub.OnRepair(r) },
	}
}

// repairDamaged runs one repair pass (every hosted.MendInterval).
func (n *Node) repairDamaged() {
	n.parts.Repair(n.loops.Context())
}
