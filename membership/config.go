package membership

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sirupsen/logrus"
)

// FetchFunc fetches path (CatalogPath or RosterPath) from a peer, normally
// with an HTTP GET to the peer's admin address. It is how anti-entropy pulls
// state too big for a Serf query. The body must be what Agent.Handler serves.
type FetchFunc func(ctx context.Context, peer Member, path string) ([]byte, error)

// Config is the configuration of an Agent. Start from DefaultConfig.
type Config struct {
	// NodeName is the Serf member name; unique in the cluster. Default: the
	// hostname.
	NodeName string

	// BrokerID is the Kafka broker id ("id" tag); unique in the cluster and
	// never reused for a different machine's data. Must be ≥ 0.
	BrokerID int32

	// BindAddr and BindPort are where gossip listens (UDP and TCP). Port 0
	// picks a free port, which only suits tests: a restarted node must come
	// back on the same address to rejoin from its snapshot.
	BindAddr string
	BindPort int

	// AdvertiseAddr and AdvertisePort are the gossip address peers use, when
	// it differs from the bind address. Empty/0: derived from the bind address.
	AdvertiseAddr string
	AdvertisePort int

	// KafkaAddr is the advertised Kafka listener ("kafka" tag, host:port),
	// AdminAddr the admin HTTP listener ("admin" tag, host:port) and Rack the
	// broker's rack ("rack" tag, may be empty).
	KafkaAddr string
	AdminAddr string
	Rack      string
	// Listeners maps each named Kafka listener to its advertised
	// host:port ("l.<NAME>" tags); KafkaAddr stays the main listener's,
	// for nodes that know no names.
	Listeners map[string]string
	// RaftAddr is the advertised Raft transport address ("raft" tag,
	// host:port); empty: none (the tag is left out).
	RaftAddr string

	// Features are the features advertised ("feat" tag, features.go).
	// nil: every feature of this version (Features). Empty but not nil:
	// none, the tag left out, as a node of the previous version; for
	// tests of mixed versions.
	Features []string

	// ClusterID is this node's proposal for the cluster-wide id, and
	// ClusterIDBorn when it was first made (e.g. the creation time of the
	// file it was read from). Used only until the node has adopted an id
	// (persisted in DataDir): then the cluster's oldest proposal wins and
	// every node converges on it (see Agent.ClusterID). Empty: a random id,
	// born now.
	ClusterID     string
	ClusterIDBorn time.Time

	// DataDir holds the Serf snapshot, the boot generation, the roster and the
	// topic catalog. Required; created if missing.
	DataDir string

	// Join lists seed gossip addresses (host:port) for Agent.Join. Optional:
	// a node restarted with a snapshot rejoins its previous peers by itself.
	Join []string

	// JoinBackoffMin and JoinBackoffMax bound the wait between join attempts;
	// it doubles from min to max, with up to 25% jitter.
	JoinBackoffMin time.Duration
	JoinBackoffMax time.Duration

	// GossipKey is the gossip encryption key (16, 24 or 32 bytes; Spool's CLI
	// asks for 32). KeyringFile is a Serf keyring file (a JSON array of base64
	// keys, first = primary). With both, GossipKey is installed as primary and
	// the file rewritten. With neither, gossip is plaintext.
	GossipKey   []byte
	KeyringFile string
	// Keyring, when set, is the keyring gossip uses as is, instead of one
	// built from GossipKey and KeyringFile (which Serf still rewrites on a
	// rotation): the node builds it first (BuildKeyring) and shares it with
	// the Raft transport, whose handshake authenticates with the same keys
	// and so follows a rotation of them (keys.go).
	Keyring *memberlist.Keyring

	// Memberlist carries the gossip timings. Default: memberlist's LAN
	// profile. Name, addresses, keyring and delegates are overwritten.
	Memberlist *memberlist.Config

	// Serf timings. ReapInterval is how often failed/left members past their
	// timeouts are reaped; ReconnectTimeout is how long a failed member is kept
	// (and retried) before it is reaped; TombstoneTimeout the same for a left
	// member. LeavePropagateDelay is how long Leave waits for the leave to
	// spread; BroadcastTimeout bounds the wait for a leave broadcast.
	ReapInterval        time.Duration
	ReconnectInterval   time.Duration
	ReconnectTimeout    time.Duration
	TombstoneTimeout    time.Duration
	LeavePropagateDelay time.Duration
	BroadcastTimeout    time.Duration

	// SyncInterval is the anti-entropy period: each round compares the catalog
	// digest with one random live peer and the roster with one peer whose "rv"
	// tag differs, and pulls on a difference.
	SyncInterval time.Duration

	// SyncTimeout bounds one query or fetch of anti-entropy.
	SyncTimeout time.Duration

	// UserEventMaxBytes bounds a catalog operation sent as a Serf user event
	// (name + payload). Serf gossips user events over UDP, so they must fit in
	// one packet; a bigger operation is announced by a small hint and peers
	// pull the catalog instead.
	UserEventMaxBytes int

	// Fetch pulls state from a peer for anti-entropy. Default: HTTP GET
	// http://<peer admin addr><path>, answered by Agent.Handler.
	Fetch FetchFunc

	// WatchQueueLimit bounds the events queued for one slow subscriber of
	// Subscribe or WatchTopics; beyond it the oldest are dropped and logged.
	WatchQueueLimit int

	// Log receives the agent's logs and Serf's and memberlist's, as fields.
	Log logrus.FieldLogger

	// serfLog, set by tests only, replaces the logger Serf writes to, to
	// show that nothing but the log depends on Serf's log lines.
	serfLog *log.Logger
}

// Timing profiles for UseTimings.
const (
	TimingsLAN   = "lan"   // memberlist's LAN profile: failure seen in ~5-10 s
	TimingsLocal = "local" // memberlist's loopback profile, retransmits raised
	TimingsFast  = "fast"  // sub-second probing for tests on loopback
)

// DefaultConfig returns a Config with LAN timings and working defaults; the
// caller still sets BrokerID, DataDir and the advertised addresses.
func DefaultConfig() *Config {
	hostname, err := os.Hostname()
	if err != nil || hostname == "" {
		hostname = "spool"
	}
	c := &Config{
		NodeName:          hostname,
		BindAddr:          "0.0.0.0",
		BindPort:          7946,
		DataDir:           "spool-data",
		JoinBackoffMin:    500 * time.Millisecond,
		JoinBackoffMax:    30 * time.Second,
		UserEventMaxBytes: 1000,
		WatchQueueLimit:   1 << 16,
		SyncTimeout:       5 * time.Second,
	}
	if err := c.UseTimings(TimingsLAN); err != nil {
		panic(err) // a constant profile name
	}
	return c
}

// UseTimings replaces the gossip and Serf timings with a named profile:
// TimingsLAN, TimingsLocal or TimingsFast.
func (c *Config) UseTimings(profile string) error {
	switch profile {
	case TimingsLAN:
		c.Memberlist = memberlist.DefaultLANConfig()
		c.ReapInterval = 15 * time.Second
		c.ReconnectInterval = 30 * time.Second
		c.ReconnectTimeout = 24 * time.Hour
		c.TombstoneTimeout = 24 * time.Hour
		c.LeavePropagateDelay = time.Second
		c.BroadcastTimeout = 5 * time.Second
		c.SyncInterval = 10 * time.Second
	case TimingsLocal:
		c.Memberlist = memberlist.DefaultLocalConfig()
		// Local timings gossip to few peers with few retransmits; without
		// more, a join's alive message can fail to reach everyone and wait
		// for the next push/pull.
		c.Memberlist.RetransmitMult = 6
		c.ReapInterval = 5 * time.Second
		c.ReconnectInterval = 5 * time.Second
		c.ReconnectTimeout = time.Hour
		c.TombstoneTimeout = time.Hour
		c.LeavePropagateDelay = 500 * time.Millisecond
		c.BroadcastTimeout = 3 * time.Second
		c.SyncInterval = 2 * time.Second
	case TimingsFast:
		ml := memberlist.DefaultLocalConfig()
		// Fast, yet with slack for a loaded CI machine (or the race
		// detector): a probe timeout much below 200 ms makes healthy
		// members flap to suspect.
		ml.ProbeInterval = 250 * time.Millisecond
		ml.ProbeTimeout = 200 * time.Millisecond
		ml.GossipInterval = 30 * time.Millisecond
		ml.SuspicionMult = 3
		ml.RetransmitMult = 6
		ml.PushPullInterval = 2 * time.Second
		ml.TCPTimeout = 2 * time.Second
		c.Memberlist = ml
		c.ReapInterval = time.Second
		c.ReconnectInterval = time.Second
		c.ReconnectTimeout = 10 * time.Minute
		c.TombstoneTimeout = 10 * time.Minute
		c.LeavePropagateDelay = 100 * time.Millisecond
		c.BroadcastTimeout = 2 * time.Second
		c.SyncInterval = 300 * time.Millisecond
		c.SyncTimeout = 2 * time.Second
		c.JoinBackoffMin = 100 * time.Millisecond
		c.JoinBackoffMax = time.Second
	default:
		return fmt.Errorf("unknown gossip timings %q (want %s, %s or %s)", profile, TimingsLAN, TimingsLocal, TimingsFast)
	}
	return nil
}

func (c *Config) validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is empty"))
	}
	if c.BrokerID < 0 {
		errs = append(errs, fmt.Errorf("broker id %d is negative", c.BrokerID))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data dir is empty"))
	}
	if c.BindPort < 0 || c.BindPort > 65535 || c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		errs = append(errs, fmt.Errorf("gossip port out of range (bind %d, advertise %d)", c.BindPort, c.AdvertisePort))
	}
	if c.ClusterID != "" {
		if err := validateClusterID(c.ClusterID); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Memberlist == nil {
		errs = append(errs, errors.New("no memberlist timings (start from DefaultConfig)"))
	}
	if len(c.GossipKey) != 0 {
		if err := memberlist.ValidateKey(c.GossipKey); err != nil {
			errs = append(errs, fmt.Errorf("gossip key: %w", err))
		}
	}
	if c.UserEventMaxBytes < 128 || c.UserEventMaxBytes > 8*1024 {
		errs = append(errs, fmt.Errorf("user event limit %d not in 128..8192", c.UserEventMaxBytes))
	}
	if c.SyncInterval <= 0 || c.SyncTimeout <= 0 || c.JoinBackoffMin <= 0 || c.JoinBackoffMax < c.JoinBackoffMin {
		errs = append(errs, errors.New("sync interval, sync timeout and join backoff must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("membership config: %w", err)
	}
	return nil
}
