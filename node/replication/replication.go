package replication

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sync/atomic"

	"github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
	"github.com/spool-log/spool/node/tlsfiles"
	"github.com/spool-log/spool/node/topics"
)

// Agent is what replication asks of the membership agent, once it exists.
type Agent interface {
	ClusterID() string
	LiveBrokers() map[int32]membership.Member
	Members() []membership.Member
	LastRaftAddr(id int32) (string, bool)
	IsAlive(id int32) bool
	Roster() []int32
}

// Peers makes this node's calls to its peers' admin listeners (node/peers).
type Peers interface {
	GetJSON(ctx context.Context, addr, path string, query url.Values, limit int64, out any) error
	Open(ctx context.Context, addr, path string, query url.Values) (io.ReadCloser, error)
}

// Gauges are the go-metrics calls the replication metrics make.
type Gauges interface {
	SetGauge(key []string, val float32)
	IncrCounter(key []string, val float32)
}

// Config is what the node hands its replication.
type Config struct {
	NodeID int32
	Raft   replica.DriverConfig
	// RaftAddr is where the transport listens ("": the Kafka host, any
	// port); AdvertisedRaftAddr what peers are told to dial, if set.
	RaftAddr, AdvertisedRaftAddr string
	// MembershipDir holds the agent's book of peers' Raft addresses, this
	// node's own of the last run among them (port.go).
	MembershipDir string
	// KafkaAddr and AdvertisedKafkaAddr stand in for the Raft host.
	KafkaAddr, AdvertisedKafkaAddr func() string
	// TLS is the Raft transport's TLS (nil: none).
	TLS *tlsfiles.Source
	// CopyBytesPerSecond bounds the snapshot copies served and the
	// appends to learners (0: no bound; throttle.go).
	CopyBytesPerSecond int64
	// OnLeaderChange is told of every Raft leader change here.
	OnLeaderChange func()
	// Partitions are the partitions open here.
	Partitions func() []*hosted.Partition
	// Claimed is the live leader another node claims for a partition
	// (node/leadership's table), for /readyz.
	Claimed func(id membership.TopicID, index int32) (leader int32, ok bool)
	// EvenTopics are the catalog's topics, false before the catalog exists.
	EvenTopics func() ([]topics.Spec, bool)
	// DefaultReplicationFactor and OffsetsTopicReplicationFactor are the
	// configured factors (factor.go).
	DefaultReplicationFactor, OffsetsTopicReplicationFactor int16

	Peers    Peers
	Gauges   Gauges
	Metrics  *metrics.Metrics // the transport's counters
	Registry prometheus.Registerer
	Log      logrus.FieldLogger
}

// Replication is the node's Raft driver and transport with what goes
// beside them.
type Replication struct {
	cfg      Config
	log      logrus.FieldLogger
	throttle *CopyThrottle // nil: no bound
	track    *tracker
	agent    atomic.Pointer[agentBox] // set once the agent exists
	// evenWarned is how many even-factor topics were last warned of.
	evenWarned atomic.Int64

	driver *replica.Driver
	net    *transport.Transport
}

type agentBox struct{ Agent }

// New prepares replication; nothing binds or runs until Start.
func New(cfg Config) (*Replication, error) {
	t, err := newTracker(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("replication metrics: %w", err)
	}
	return &Replication{cfg: cfg, log: cfg.Log, throttle: NewCopyThrottle(cfg.CopyBytesPerSecond), track: t}, nil
}

// SetAgent hands over the membership agent once it exists: the handshake
// binds its cluster id, peers are found in its view.
func (r *Replication) SetAgent(a Agent) { r.agent.Store(&agentBox{a}) }

func (r *Replication) agentOrNil() Agent {
	if b := r.agent.Load(); b != nil {
		return b.Agent
	}
	return nil
}

// Driver drives every replicated partition's Raft group (nil before Start).
func (r *Replication) Driver() *replica.Driver { return r.driver }

// Transport carries the Raft messages (nil before Start).
func (r *Replication) Transport() *transport.Transport { return r.net }
