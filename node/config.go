package node

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/datadir"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/scrub"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/tlsfiles"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// Config is everything a Node needs. DefaultConfig gives a usable single-node
// broker on 127.0.0.1:9092 keeping its data in ./spool-data.
type Config struct {
	// Tier is tiered storage: the object store tiered topics copy their
	// closed segments to (node/tier). Off without an endpoint.
	Tier tier.Settings

	// DataDir holds one directory per local partition (<topic>-<n>) plus
	// the node's own small files: the topic catalog and the producer-id
	// block.
	DataDir string

	// KafkaAddr is the host:port the Kafka listener binds. Port 0 picks a
	// free port; KafkaAddr() reports the bound address after Start.
	KafkaAddr string
	// AdvertisedKafkaAddr is what Metadata tells clients to connect to.
	// Empty means the bound Kafka address.
	AdvertisedKafkaAddr string
	// KafkaListenerName and KafkaProtocol name the listener on KafkaAddr
	// and its security protocol; empty means PLAINTEXT, named after its
	// protocol (node/access/listeners.go).
	KafkaListenerName string
	KafkaProtocol     SecurityProtocol
	// Listeners are Kafka listeners beside the main one, each with its own
	// name, protocol and advertised address.
	Listeners []Listener
	// TLS is the certificate, key and optional client CA bundle (mTLS) of
	// every SSL and SASL_SSL listener. The files are read again on
	// ReloadTLS (SIGHUP) and every TLSReloadInterval; new connections get
	// the new certificate.
	TLS tlsfiles.Files
	// AdminTLS, when set, serves the admin HTTP API over TLS (mTLS with a
	// client CA bundle). Peers then pull anti-entropy and leadership state
	// from it over HTTPS, trusting AdminTLSPeerCAFile (default: the client
	// CA bundle, else the system's roots) and presenting the admin
	// certificate as their client certificate: every node of a cluster
	// must use the same admin scheme.
	AdminTLS           tlsfiles.Files
	AdminTLSPeerCAFile string
	// AdminTokenFile, when set, holds the bearer token the admin API
	// accepts for requests that change state (as it accepts a verified
	// client certificate under admin mTLS), re-read on Reload (SIGHUP).
	// The node presents it to its peers' admin APIs, so every node of a
	// cluster must be given the same token. AdminTokenForReads requires
	// it for reads too (/healthz and /readyz excepted): node/admin/access.go.
	AdminTokenFile     string
	AdminTokenForReads bool
	// TLSReloadInterval is how often the TLS files are checked for
	// changes; 0 means only on ReloadTLS.
	TLSReloadInterval time.Duration
	// SASL configures authentication on SASL_PLAINTEXT and SASL_SSL
	// listeners.
	SASL SASLConfig
	// SuperUsers are principals ("User:admin", "User:CN=ops,O=acme")
	// every request of which is allowed, whatever the ACLs say (Kafka's
	// super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACL allows a request on a resource no ACL matches
	// once the cluster has ACLs (Kafka's allow.everyone.if.no.acl.found).
	// Off (the default, as Kafka's), such a request is denied to all but
	// SuperUsers. A cluster with no ACL at all serves everyone either way.
	AllowEveryoneIfNoACL bool
	// authzHook, when set (tests), sees every authorization a handler
	// asks for, before the answer.
	authzHook func(apiKey int16, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string)

	// AdminAddr is the host:port of the admin HTTP server. Empty disables it.
	AdminAddr string
	// EnablePprof serves Go's profiler at /debug/pprof/ on the admin
	// server. Off by default: the admin port is reachable by peers.
	EnablePprof bool

	// NodeID is this broker's id in Metadata (and in the cluster). It is
	// also the high 31 bits of every producer id this node hands out, so
	// two nodes never issue the same one.
	NodeID int32
	// Rack is reported in Metadata; empty means none.
	Rack string

	// AutoCreateTopics lets Metadata (and Produce) create unknown topics
	// with DefaultPartitions partitions and the default topic config.
	AutoCreateTopics bool
	// DefaultPartitions is the partition count of auto-created topics and
	// of CreateTopics requests that ask for -1.
	DefaultPartitions int32

	// Topic is the default configuration of every topic; a topic's own
	// configs (retention.ms, ...) override it.
	Topic topicconfig.Defaults

	// Groups configures the consumer-group coordinator.
	Groups GroupSettings
	// TxnAbortInterval is how often the transaction coordinator looks for
	// transactions past their timeout to abort
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms); zero
	// means 10s.
	TxnAbortInterval time.Duration

	// MaxRequestBytes bounds one Kafka request frame; a bigger one closes
	// the connection.
	MaxRequestBytes int32
	// QueuedMaxRequestBytes bounds the memory of requests being read and
	// queued across all connections (wire.Config.QueuedMaxRequestBytes).
	QueuedMaxRequestBytes int64
	// RequestReadTimeout closes a connection whose request has begun but
	// is not whole after this long (wire.Config.RequestReadTimeout).
	RequestReadTimeout time.Duration
	// Sendfile sends Fetch records from segment files to the socket with
	// sendfile(2); false makes every Fetch use the user-space copy (pread
	// and write), to compare the two or where sendfile misbehaves.
	// DefaultConfig turns it on.
	Sendfile bool
	// MaxOpenFiles bounds the segment files held open across all
	// partitions (shared partition.FileCache).
	MaxOpenFiles int

	// RetentionCheckInterval is how often every partition enforces its
	// retention.
	RetentionCheckInterval time.Duration
	// ProducerIDExpiry is how long a producer's sequence state is kept
	// after its last append (Kafka's producer.id.expiration.ms).
	ProducerIDExpiry time.Duration

	// QuarantineRetention is how long what the node drops (partition
	// directories of deleted topics, bytes recovery cut) stays in
	// DataDir/quarantine before it is reclaimed; negative keeps it until
	// an operator purges it (`spool quarantine purge`).
	QuarantineRetention time.Duration

	// ScrubRate bounds the background CRC scrub of sealed segments, in
	// bytes per second across all partitions; 0 turns it off (node/scrub).
	ScrubRate int64
	// ScrubInterval is the time between the starts of two scrub passes.
	ScrubInterval time.Duration

	// Logger receives the node's logs; nil means logrus's standard logger.
	Logger logrus.FieldLogger

	// Gossip is how the node finds its peers. A node alone is a cluster of
	// one; the topic catalog always lives in the membership agent.
	Gossip GossipConfig

	// Replication (parts.go): RaftAddr is the host:port the Raft
	// transport between replicas binds (port 0 picks one; empty: the Kafka
	// listener's host, any port), advertised to peers in the "raft" gossip
	// tag as AdvertisedRaftAddr (default: the bound address, with the
	// advertised Kafka host for a wildcard bind); Raft tunes the driver of
	// every partition's group.
	RaftAddr           string
	AdvertisedRaftAddr string
	Raft               replica.DriverConfig
	// RaftTLS, when set, makes the Raft transport mutual TLS: the node's
	// certificate and key (server and client key usage, names of its
	// advertised Raft host), and in ClientCAFile the CAs every peer's
	// certificate must chain to, both ways. All three files or none;
	// every node of a cluster must agree. Reloaded as TLS is.
	RaftTLS tlsfiles.Files
	// DefaultReplicationFactor is the replication factor of topics created
	// without one (CreateTopics' -1, auto-created topics), lowered to the
	// largest odd number not above it and the roster's brokers
	// (node/replication/factor.go).
	DefaultReplicationFactor int16
	// AutoRebalance (on by default) has the leaders move their partitions
	// to where placement over the roster puts them once brokers join or
	// are decommissioned (node/moves: starts.go), at most RebalanceMaxMoves moves
	// under way in the cluster; pinned (manual) assignments stay. Each
	// move is the safe hand-off of a reassignment (a learner catches up
	// before a replica leaves), logged and shown by rebalance status.
	AutoRebalance     bool
	RebalanceMaxMoves int
	// FailedBrokerGrace is how long a broker of the roster may be down
	// before automatic rebalancing drains it, its replicas replaced on live
	// brokers (node/moves: starts.go): long enough that a reboot moves nothing.
	FailedBrokerGrace time.Duration
	// ReplicaCopyBytesPerSecond bounds the bytes per second this node
	// serves to replicas copying a snapshot's records (a reassignment's
	// new replica, a follower far behind) and the Raft entries its
	// leaders send to learners catching up after the copy, all together
	// (voters are never held back); 0 is no bound.
	ReplicaCopyBytesPerSecond int64
	// Quota is how client byte-rate quotas are measured (node/quota):
	// Kafka's quota.window.num samples of quota.window.size.seconds.
	Quota quota.Config
}

// GroupSettings are the consumer-group coordinator's broker settings.
type GroupSettings struct {
	// InitialRebalanceDelay is how long the first rebalance of an empty
	// group waits for more members (group.initial.rebalance.delay.ms).
	// Zero completes it as soon as every known member has joined, which
	// suits tests and single-consumer deployments.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (group.min/max.session.timeout.ms).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// OffsetsTopicPartitions is the partition count __consumer_offsets is
	// created with (offsets.topic.num.partitions). It decides which
	// partition, so which node, coordinates each group; once the topic
	// exists its own count wins, so changing this later has no effect.
	OffsetsTopicPartitions int32
	// OffsetsTopicReplicationFactor is the replication factor
	// __consumer_offsets is created with, lowered to the largest odd
	// number not above it and the roster's brokers
	// (offsets.topic.replication.factor); 0 means 3.
	OffsetsTopicReplicationFactor int16
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are the
	// session timeout and heartbeat interval of consumer-protocol
	// (KIP-848) members, which the broker sets rather than the client
	// (group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms).
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
}

// GossipConfig is how a node finds and talks to its peers (node/cluster).
type GossipConfig = cluster.GossipConfig

// DefaultGossipConfig is what `spool node` gossips with when given no flags.
func DefaultGossipConfig() GossipConfig { return cluster.DefaultGossipConfig() }

// DefaultConfig returns the configuration `spool node` runs with when given no
// flags.
func DefaultConfig() Config {
	pc := partition.DefaultConfig()
	gc := group.DefaultConfig()
	return Config{
		Tier:                     tier.DefaultSettings(),
		DataDir:                  "./spool-data",
		KafkaAddr:                "127.0.0.1:9092",
		AdminAddr:                "127.0.0.1:9644",
		Raft:                     replica.DefaultDriverConfig(),
		DefaultReplicationFactor: 1,
		AutoRebalance:            true,
		RebalanceMaxMoves:        2,
		FailedBrokerGrace:        30 * time.Minute,
		NodeID:                   1,
		AutoCreateTopics:         true,
		DefaultPartitions:        1,
		MaxRequestBytes:          100 << 20,
		QueuedMaxRequestBytes:    wire.DefaultQueuedMaxRequestBytes,
		RequestReadTimeout:       wire.DefaultRequestReadTimeout,
		Sendfile:                 true,
		MaxOpenFiles:             1024,
		RetentionCheckInterval:   30 * time.Second,
		ProducerIDExpiry:         24 * time.Hour,
		QuarantineRetention:      datadir.DefaultQuarantineRetention,
		TLSReloadInterval:        time.Minute,
		SASL:                     DefaultSASLConfig(),
		Quota:                    quota.DefaultConfig(),

		ScrubRate:     scrub.DefaultRate,
		ScrubInterval: scrub.DefaultInterval,
		Topic: topicconfig.Defaults{
			RetentionAge:    pc.RetentionAge,
			RetentionBytes:  pc.RetentionBytes,
			SegmentBytes:    pc.SegmentBytes,
			SegmentAge:      pc.SegmentAge,
			LogAppendTime:   pc.LogAppendTime,
			MaxMessageBytes: 1 << 20 * 8,
			Flush:           pc.Flush,
			FlushEvery:      pc.FlushEvery,
		},
		Gossip: DefaultGossipConfig(),
		Groups: GroupSettings{
			InitialRebalanceDelay:         gc.InitialRebalanceDelay,
			MinSessionTimeout:             gc.MinSessionTimeout,
			MaxSessionTimeout:             gc.MaxSessionTimeout,
			OffsetsTopicPartitions:        gc.Partitions,
			OffsetsTopicReplicationFactor: 3,

			ConsumerSessionTimeout:    gc.ConsumerSessionTimeout,
			ConsumerHeartbeatInterval: gc.ConsumerHeartbeatInterval,
		},
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("data dir is empty")
	}
	if c.KafkaAddr == "" {
		return fmt.Errorf("kafka address is empty")
	}
	if c.Quota.Samples < 2 || c.Quota.SampleWindow <= 0 {
		return fmt.Errorf("quota window: %d samples of %v, want at least 2 samples of more than 0", c.Quota.Samples, c.Quota.SampleWindow)
	}
	if c.ReplicaCopyBytesPerSecond < 0 {
		return fmt.Errorf("replica copy bytes per second %d: want 0 (no bound) or more", c.ReplicaCopyBytesPerSecond)
	}
	if c.AutoRebalance && (c.RebalanceMaxMoves < 1 || c.RebalanceMaxMoves > 10_000) {
		return fmt.Errorf("rebalance max moves %d: want 1..10000", c.RebalanceMaxMoves)
	}
	if c.AutoRebalance && c.FailedBrokerGrace <= 0 {
		return fmt.Errorf("failed broker grace %v: want more than 0", c.FailedBrokerGrace)
	}
	if err := c.validateListeners(); err != nil {
		return err
	}
	if err := c.AdminTLS.Validate(); err != nil {
		return fmt.Errorf("admin %w", err)
	}
	if err := c.SASL.Validate(); err != nil {
		return err
	}
	if c.RaftTLS.Enabled() && (c.RaftTLS.CertFile == "" || c.RaftTLS.KeyFile == "" || c.RaftTLS.ClientCAFile == "") {
		return fmt.Errorf("raft TLS needs a certificate file, a key file and a CA file")
	}
	for _, p := range c.SuperUsers {
		if err := authz.ValidPrincipal(p); err != nil {
			return fmt.Errorf("super user: %w", err)
		}
	}
	if c.AdminTokenForReads && c.AdminTokenFile == "" {
		return fmt.Errorf("admin token for reads needs an admin token file")
	}
	if c.NodeID < 0 {
		return fmt.Errorf("node id %d is negative", c.NodeID)
	}
	if c.DefaultPartitions < 1 {
		return fmt.Errorf("default partitions %d, want >= 1", c.DefaultPartitions)
	}
	if c.MaxRequestBytes <= 0 {
		return fmt.Errorf("max request bytes %d, want > 0", c.MaxRequestBytes)
	}
	if c.QueuedMaxRequestBytes < 0 {
		return fmt.Errorf("queued max request bytes %d, want > 0", c.QueuedMaxRequestBytes)
	}
	if c.RequestReadTimeout < 0 {
		return fmt.Errorf("request read timeout %v, want > 0", c.RequestReadTimeout)
	}
	if c.MaxOpenFiles <= 0 {
		c.MaxOpenFiles = 1024
	}
	if c.RetentionCheckInterval <= 0 {
		c.RetentionCheckInterval = 30 * time.Second
	}
	if c.ProducerIDExpiry <= 0 {
		c.ProducerIDExpiry = 24 * time.Hour
	}
	if c.QuarantineRetention == 0 {
		c.QuarantineRetention = datadir.DefaultQuarantineRetention
	}
	if err := c.Groups.validate(); err != nil {
		return err
	}
	if err := c.Tier.Validate(); err != nil {
		return err
	}
	// The same bounds as a topic's own segment.bytes and retention.bytes.
	if c.Topic.SegmentBytes < 14 || c.Topic.SegmentBytes > 1<<31-1 {
		return fmt.Errorf("default segment bytes %d, want 14..%d", c.Topic.SegmentBytes, 1<<31-1)
	}
	if c.Topic.RetentionBytes < -1 {
		return fmt.Errorf("default retention bytes %d, want -1 (unbounded) or more", c.Topic.RetentionBytes)
	}
	if c.Topic.MaxMessageBytes <= 0 {
		c.Topic.MaxMessageBytes = 8 << 20
	}
	return nil
}

// validate fills the zero settings that have no meaning (no partitions, a
// zero session ceiling) with the defaults and refuses impossible ones.
func (g *GroupSettings) validate() error {
	def := group.DefaultConfig()
	if g.OffsetsTopicPartitions == 0 {
		g.OffsetsTopicPartitions = def.Partitions
	}
	if g.OffsetsTopicReplicationFactor == 0 {
		g.OffsetsTopicReplicationFactor = 3
	}
	if g.OffsetsTopicReplicationFactor < 1 {
		return fmt.Errorf("offsets topic replication factor %d, want >= 1", g.OffsetsTopicReplicationFactor)
	}
	if g.MaxSessionTimeout == 0 {
		g.MaxSessionTimeout = def.MaxSessionTimeout
	}
	if g.ConsumerSessionTimeout == 0 {
		g.ConsumerSessionTimeout = def.ConsumerSessionTimeout
	}
	if g.ConsumerHeartbeatInterval == 0 {
		g.ConsumerHeartbeatInterval = def.ConsumerHeartbeatInterval
	}
	if g.ConsumerSessionTimeout < 0 || g.ConsumerHeartbeatInterval < 0 || g.ConsumerHeartbeatInterval >= g.ConsumerSessionTimeout {
		return fmt.Errorf("consumer group heartbeat interval %v and session timeout %v: want 0 < interval < session", g.ConsumerHeartbeatInterval, g.ConsumerSessionTimeout)
	}
	if g.InitialRebalanceDelay < 0 {
		return fmt.Errorf("group initial rebalance delay %v is negative", g.InitialRebalanceDelay)
	}
	if g.MinSessionTimeout < 0 || g.MaxSessionTimeout < g.MinSessionTimeout {
		return fmt.Errorf("group session timeouts %v..%v: want 0 <= min <= max", g.MinSessionTimeout, g.MaxSessionTimeout)
	}
	if g.OffsetsTopicPartitions < 1 || g.OffsetsTopicPartitions > maxPartitionsPerTopic {
		return fmt.Errorf("offsets topic partitions %d, want 1..%d", g.OffsetsTopicPartitions, maxPartitionsPerTopic)
	}
	return nil
}

// brokerConfigs are c's broker settings as DescribeConfigs reports them
// (node/topicconfig's broker.go); advertised is advertised.listeners.
func brokerConfigs(c Config, advertised string) []topicconfig.BrokerConfig {
	settings := func(c Config) topicconfig.Broker {
		return topicconfig.Broker{
			AdvertisedListeners: advertised, AutoCreateTopics: c.AutoCreateTopics, NodeID: c.NodeID, Rack: c.Rack,
			InitialRebalanceDelay: c.Groups.InitialRebalanceDelay, MaxSessionTimeout: c.Groups.MaxSessionTimeout,
			MinSessionTimeout: c.Groups.MinSessionTimeout, Topic: c.Topic, DataDir: c.DataDir,
			RetentionCheckInterval: c.RetentionCheckInterval, DefaultPartitions: c.DefaultPartitions,
			OffsetsTopicPartitions: c.Groups.OffsetsTopicPartitions, ProducerIDExpiry: c.ProducerIDExpiry,
			MaxRequestBytes: c.MaxRequestBytes,
		}
	}
	return topicconfig.BrokerConfigs(settings(c), settings(DefaultConfig()))
}

// alterBrokerConfigs refuses any change to a broker setting: each is a flag
// read at start (node/topicconfig's broker.go); advertised is
// advertised.listeners.
func alterBrokerConfigs(c Config, advertised, resource string, names []string) error {
	if resource != "" && resource != strconv.Itoa(int(c.NodeID)) {
		return &topicError{kerr.InvalidRequest, "this is broker " + strconv.Itoa(int(c.NodeID))}
	}
	if len(names) == 0 {
		return nil
	}
	if _, ok := topicconfig.FindBrokerConfig(brokerConfigs(c, advertised), names[0]); !ok {
		return &topicError{kerr.InvalidConfig, fmt.Sprintf("unknown broker config %q", names[0])}
	}
	return &topicError{kerr.InvalidConfig, fmt.Sprintf("broker config %q is read-only: it is set by a flag at start", names[0])}
}
