package membership

import (
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/serf/serf"
)

// MemberStatus is a member's liveness as gossip sees it.
type MemberStatus string

const (
	StatusAlive  MemberStatus = "alive"
	StatusFailed MemberStatus = "failed" // stopped answering probes
	StatusLeft   MemberStatus = "left"   // left gracefully (or is leaving)
)

// Member is one Spool node as gossip knows it.
type Member struct {
	Name       string       `json:"name"`
	BrokerID   int32        `json:"brokerId"`
	Status     MemberStatus `json:"status"`
	GossipAddr string       `json:"gossipAddr"`
	KafkaAddr  string       `json:"kafkaAddr"`
	// Listeners are the advertised addresses by listener name; nil for a
	// node that gossips only KafkaAddr.
	Listeners    map[string]string `json:"listeners,omitempty"`
	AdminAddr    string            `json:"adminAddr"`
	RaftAddr     string            `json:"raftAddr,omitempty"`
	Rack         string            `json:"rack,omitempty"`
	Gen          uint64            `json:"gen"`
	RosterDigest string            `json:"rosterDigest"`
	ClusterID    string            `json:"clusterId,omitempty"`  // the cluster id the member has settled on so far
	Leadership   string            `json:"leadership,omitempty"` // the "lv" tag: version of the partitions it leads
	// Features are what the member's version can do (features.go); nil
	// for a node of the version before they were advertised.
	Features []string `json:"features,omitempty"`
	// Serving is the "sv" tag: how many alive brokers the member sees,
	// published once it serves Kafka requests; -1 until then (serving.go).
	Serving int `json:"serving"`
}

// memberFromSerf converts a Serf member; ok is false for a member without a
// valid broker id tag (not a Spool node), which Spool ignores.
func memberFromSerf(m serf.Member) (Member, bool) {
	id, err := parseBrokerID(m.Tags)
	if err != nil {
		return Member{}, false
	}
	gen, _ := strconv.ParseUint(m.Tags[TagGeneration], 10, 64)
	cid, _ := parseClusterIDTag(m.Tags[TagClusterID])
	return Member{
		Name:         m.Name,
		BrokerID:     id,
		Status:       statusFromSerf(m.Status),
		GossipAddr:   net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.Port))),
		KafkaAddr:    m.Tags[TagKafkaAddr],
		Listeners:    parseListeners(m.Tags),
		RaftAddr:     m.Tags[TagRaft],
		AdminAddr:    m.Tags[TagAdminAddr],
		Rack:         m.Tags[TagRack],
		Gen:          gen,
		RosterDigest: m.Tags[TagRosterDigest],
		ClusterID:    cid.ID,
		Leadership:   m.Tags[TagLeadership],
		Features:     parseFeatures(m.Tags),
		Serving:      parseServing(m.Tags),
	}, true
}

func statusFromSerf(s serf.MemberStatus) MemberStatus {
	switch s {
	case serf.StatusAlive:
		return StatusAlive
	case serf.StatusFailed:
		return StatusFailed
	default: // leaving, left
		return StatusLeft
	}
}

// Members returns every Spool node gossip knows of, this one included, by
// broker id then name. Failed and left members stay listed until Serf reaps
// them (ReconnectTimeout / TombstoneTimeout).
func (a *Agent) Members() []Member {
	var out []Member
	for _, sm := range a.serf.Members() {
		if m, ok := memberFromSerf(sm); ok {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerID != out[j].BrokerID {
			return out[i].BrokerID < out[j].BrokerID
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// IsAlive reports whether broker id is among LiveBrokers, from a snapshot
// of the alive brokers' ids (aliveBrokers). Produce, Fetch, Metadata and
// the leadership claims ask it once per partition.
func (a *Agent) IsAlive(id int32) bool {
	if id == a.cfg.BrokerID {
		// Asked on every produced and fetched partition this node leads:
		// answered without copying the member list.
		return a.serf.State() == serf.SerfAlive
	}
	return a.aliveBrokers()[id]
}

// aliveFor is how long a snapshot of the alive brokers answers IsAlive:
// a node with 10,000 partitions asks about every replica of each twice a
// second (its leadership claims), and copying Serf's member list for each
// was most of its idle CPU. Gossip's own view lags by far more.
const aliveFor = 50 * time.Millisecond

type aliveSnapshot struct {
	at  time.Time
	ids map[int32]bool
}

// aliveBrokers is the brokers gossip sees alive, at most aliveFor old (a
// member event drops the snapshot at once).
func (a *Agent) aliveBrokers() map[int32]bool {
	if s := a.alive.Load(); s != nil && time.Since(s.at) < aliveFor {
		return s.ids
	}
	s := &aliveSnapshot{at: time.Now(), ids: map[int32]bool{}}
	for id := range a.LiveBrokers() {
		s.ids[id] = true
	}
	a.alive.Store(s)
	return s.ids
}

// PreferredLeader is the package's PreferredLeader against the current
// liveness (IsAlive).
func (a *Agent) PreferredLeader(replicas []int32) (leader int32, ok bool) {
	return preferredLeader(replicas, a.IsAlive)
}

// LiveBrokers returns the alive members by broker id. With a duplicate id
// (which the agent refuses, see Health) the first by name is kept.
func (a *Agent) LiveBrokers() map[int32]Member {
	out := map[int32]Member{}
	for _, m := range a.Members() {
		if m.Status != StatusAlive {
			continue
		}
		if _, dup := out[m.BrokerID]; !dup {
			out[m.BrokerID] = m
		}
	}
	return out
}

// Leader returns the leader of a partition with the given replicas: the first
// replica, in succession order, that is alive. ok is false when no replica is
// alive, which the node answers with LEADER_NOT_AVAILABLE.
func Leader(replicas []int32, live map[int32]Member) (leader int32, ok bool) {
	for _, b := range replicas {
		if _, alive := live[b]; alive {
			return b, true
		}
	}
	return -1, false
}

// PreferredLeader returns the first replica if it is alive. Until partitions
// replicate, only that replica holds the data, so a partition whose first
// replica is down must be reported LEADER_NOT_AVAILABLE rather than served,
// empty, by the next one; switch to Leader once replication lands.
func PreferredLeader(replicas []int32, live map[int32]Member) (leader int32, ok bool) {
	return preferredLeader(replicas, func(id int32) bool { _, alive := live[id]; return alive })
}

func preferredLeader(replicas []int32, alive func(int32) bool) (int32, bool) {
	if len(replicas) == 0 || !alive(replicas[0]) {
		return -1, false
	}
	return replicas[0], true
}

// Local returns this node as a Member.
func (a *Agent) Local() Member {
	m, _ := memberFromSerf(a.serf.LocalMember())
	return m
}

// ListenerAddr is the member's advertised address on the named listener:
// its "l.<name>" tag, or, for a node that gossips no listener names, its
// "kafka" address. ok is false when the member has named listeners but not
// this one: a client of that listener cannot be sent there.
func (m Member) ListenerAddr(name string) (addr string, ok bool) {
	if m.Listeners == nil {
		return m.KafkaAddr, m.KafkaAddr != ""
	}
	addr, ok = m.Listeners[name]
	return addr, ok
}
