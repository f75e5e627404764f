package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/leadership"
)

// The cluster part of the admin API: what SREs look at to see who is in the
// cluster, who leads what, and where placement would put things today.

// The bodies of /v1/members, /v1/members/watch and /v1/placement, which
// package adminapi defines for the client too.
type (
	MemberInfo         = adminapi.MemberInfo
	MemberEvent        = adminapi.MemberEvent
	PartitionPlacement = adminapi.PartitionPlacement
)

// StatusJoining is a member alive in gossip that does not serve yet.
const StatusJoining = adminapi.StatusJoining

// memberInfo is m as the admin API shows it; alive is how many alive
// brokers this node sees.
func memberInfo(m membership.Member, led map[int32]int, alive int) MemberInfo {
	mi := MemberInfo{
		Name: m.Name, ID: m.BrokerID, Status: string(m.Status),
		KafkaAddr: m.KafkaAddr, AdminAddr: m.AdminAddr, GossipAddr: m.GossipAddr,
		RaftAddr: m.RaftAddr, Rack: m.Rack, Generation: m.Gen,
	}
	if m.Status == membership.StatusAlive {
		if !membership.MemberServes(m, alive) {
			mi.Status = StatusJoining
		}
		mi.PartitionsLed = led[m.BrokerID]
	}
	return mi
}

// Members lists the members gossip knows, this node included, by id.
func (a *API) Members() []MemberInfo {
	led := a.cfg.Node.PartitionsLed()
	members := a.cfg.Agent.Members()
	alive := len(a.cfg.Agent.LiveBrokers())
	out := make([]MemberInfo, len(members))
	for i, m := range members {
		out[i] = memberInfo(m, led, alive)
	}
	return out
}

// Placement describes every partition of topic, or of every topic when
// topic is empty; ok is false for an unknown topic.
func (a *API) Placement(topic string) (out []PartitionPlacement, ok bool) {
	topics := a.cfg.Agent.Topics()
	if topic != "" {
		e, found := a.cfg.Agent.Topic(topic)
		if !found {
			return nil, false
		}
		topics = []membership.TopicEntry{e}
	}
	roster := a.cfg.Agent.Roster()
	out = []PartitionPlacement{}
	for _, t := range topics {
		// The whole topic, as at creation: placement balances load across
		// a topic's partitions, so one partition's place depends on all.
		preferred := membership.PlaceTopic(t.Name, t.Partitions, roster, int(t.ReplicationFactor))
		for p, replicas := range t.Replicas {
			pref := preferred[p]
			ls := a.cfg.Node.Leadership(t.Name, int32(p))
			out = append(out, PartitionPlacement{
				Topic: t.Name, Partition: int32(p),
				Replicas: slices.Clone(replicas),
				Leader:   ls.Leader, LeaderEpoch: ls.LeaderEpoch, ISR: ls.ISR, Offline: ls.Offline,
				Preferred: pref,
				Differs:   !slices.Equal(pref, replicas),
			})
		}
	}
	return out, true
}

// ReplicaSnapshotPath is where a peer reads a replica's snapshot with its
// records (node/replica/snapcopy.go), the partition named by the query's
// group (the Raft group's key: topic id in hex, "/", partition).
const ReplicaSnapshotPath = "/internal/replica/snapshot"

// ReplicaCaughtUpPath is where a damaged replica asks its leader whether
// the rest of its group holds everything committed (node/hosted's
// repair.go): the query's group, without (its broker id) and rebuild=1
// when it throws its log away on a yes.
const ReplicaCaughtUpPath = "/internal/replica/caught-up"

// TxnPath is where peers post transaction requests (node/coord: Txns.ServeHTTP):
// TxnPath+"marker", TxnPath+"verify". POSTs need the admin credential
// when one is set, which peers present.
const TxnPath = "/internal/txn/"

// SharePath is where peers post share-group state requests
// (node/share: Node.ServeState): SharePath+"claim", SharePath+"write". POSTs need
// the admin credential when one is set, as TxnPath's.
const SharePath = "/internal/share/"

// clusterRoutes serves who is in the cluster, who leads what and where
// placement would put it, and the endpoints peers pull from (membership,
// and the leadership claims of node/leadership).
func (a *API) clusterRoutes(mux *http.ServeMux) {
	mux.Handle("/internal/membership/", a.cfg.Agent.Handler())
	if a.cfg.Leadership != nil {
		mux.Handle("GET "+leadership.Path, a.cfg.Leadership)
	}
	if a.cfg.Snapshots != nil {
		mux.Handle("GET "+ReplicaSnapshotPath, a.cfg.Snapshots)
	}
	if a.cfg.CaughtUp != nil {
		mux.Handle("GET "+ReplicaCaughtUpPath, a.cfg.CaughtUp)
	}
	if a.cfg.Txn != nil {
		mux.Handle("POST "+TxnPath, a.cfg.Txn)
	}
	if a.cfg.Share != nil {
		mux.Handle("POST "+SharePath, a.cfg.Share)
	}
	if a.cfg.ShareGroups != nil {
		mux.Handle("GET /v1/share-groups/{group}", a.cfg.ShareGroups)
	}
	mux.HandleFunc("GET /v1/members", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, a.Members())
	})
	mux.HandleFunc("GET /v1/members/watch", a.serveMemberWatch)
	mux.HandleFunc("GET /v1/placement", func(w http.ResponseWriter, r *http.Request) {
		topic := r.URL.Query().Get("topic")
		out, ok := a.Placement(topic)
		if !ok {
			http.Error(w, "unknown topic "+strconv.Quote(topic), http.StatusNotFound)
			return
		}
		httpjson.Write(w, out)
	})
	mux.HandleFunc("GET /v1/roster", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, a.cfg.Agent.RosterEntries())
	})
	// Decommission drains the broker (membership/roster_drain.go); force
	// leaves its replication-factor-1 partitions behind, cancel stops a
	// drain. The reply is the roster, as before drains existed; progress
	// is GET /v1/roster/drain.
	mux.HandleFunc("POST /v1/roster/decommission", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		id, err := strconv.ParseInt(q.Get("id"), 10, 32)
		if err != nil || id < 0 {
			http.Error(w, "want ?id=<broker id>", http.StatusBadRequest)
			return
		}
		cancel, force := q.Get("cancel") == "1", q.Get("force") == "1"
		if cancel {
			err = a.cfg.Agent.CancelDecommission(int32(id))
		} else {
			err = a.cfg.Agent.Decommission(int32(id), force)
		}
		switch {
		case errors.Is(err, membership.ErrDrainBlocked), errors.Is(err, membership.ErrDecommissioned), errors.Is(err, membership.ErrMixedVersions):
			http.Error(w, err.Error(), http.StatusConflict)
		case errors.Is(err, membership.ErrUnknownBroker):
			http.Error(w, err.Error(), http.StatusNotFound)
		case errors.Is(err, membership.ErrNotDurable):
			http.Error(w, err.Error(), http.StatusInsufficientStorage)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			a.cfg.Log.WithField("broker", id).WithField("cancel", cancel).WithField("force", force).Warn("decommission through the admin API")
			httpjson.Write(w, a.cfg.Agent.RosterEntries())
		}
	})
	mux.HandleFunc("GET /v1/roster/drain", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.URL.Query().Get("id"), 10, 32)
		if err != nil || id < 0 {
			http.Error(w, "want ?id=<broker id>", http.StatusBadRequest)
			return
		}
		httpjson.Write(w, a.cfg.Agent.DrainProgress(int32(id)))
	})
}

// MemberEvent is ev as /v1/members/watch shows it.
func (a *API) MemberEvent(ev membership.MemberEvent) MemberEvent {
	led := a.cfg.Node.PartitionsLed()
	return MemberEvent{Type: string(ev.Type), Time: ev.Time, Member: memberInfo(ev.Member, led, len(a.cfg.Agent.LiveBrokers()))}
}

// serveMemberWatch streams membership events as NDJSON, one flushed line per
// event, until the client goes away or the node shuts down.
func (a *API) serveMemberWatch(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	events, cancel := a.cfg.Agent.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flusher.Flush() // the client knows it is subscribed before any event
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-a.cfg.Closing:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if err := enc.Encode(a.MemberEvent(ev)); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
