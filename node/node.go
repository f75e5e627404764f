package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/admin/console"
	"github.com/spool-log/spool/node/admission"
	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/datadir"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/moves"
	"github.com/spool-log/spool/node/peers"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/transport"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/node/scrub"
	"github.com/spool-log/spool/node/tlsfiles"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// Files the node keeps in DataDir beside the partition directories.
const (
	producerIDsFileName = "producer-ids"
	// scrubFindingsFileName keeps the scrubber's findings across restarts
	// (node/scrub's findings.go).
	scrubFindingsFileName = "scrub-findings.json"
)

// Node is one Spool broker.
type Node struct {
	cfg        Config
	log        logrus.FieldLogger
	lock       *datadir.Lock       // held from New to Shutdown: one process per data dir
	quarantine *datadir.Quarantine // what the node drops goes here (datadir)
	files      *partition.FileCache

	// The cluster view and the topic catalog, both from the membership
	// agent, which Start creates once the listeners are bound.
	agent   *membership.Agent
	cluster *gossipCluster
	catalog *topics.Catalog
	leaders *leaders // who leads what, cluster-wide (leaders.go)
	led     ledMarks // the partitions' first leaders, recorded (led.go)

	// raft drives every replicated partition's Raft group; raftNet carries
	// their messages (replication.go).
	raft    *replica.Driver
	raftNet *transport.Transport

	// parts is the partitions open here, with their reconcile
	// (node/hosted's Set; its locks).
	parts *hosted.Set[TopicSpec]
	// mover carries out moves: reassignments, drains, rebalancing
	// (node/moves; made with the agent, in startMembership).
	mover *moves.Mover
	// quotas enforces the client byte-rate quotas (quota_enforce.go).
	quotas *quota.Manager
	// copyThrottle bounds the snapshot copies this node serves (nil: none).
	copyThrottle *copyThrottle
	// coords are the group, transaction and share-group coordinators,
	// each made on first use (node/coord; coordinators.go).
	coords *coord.Coordinators

	server    *wire.Server
	kafkaLn   net.Listener // the main listener's, listeners[0]
	kafkaAddr string
	listeners []*kafkaListener // every Kafka listener, the main one first (listeners.go)
	admin     *http.Server
	adminLn   net.Listener

	// kafkaTLS and adminTLS are the reloadable TLS configurations of the
	// SSL/SASL_SSL listeners and the admin API; nil without TLS
	// (security.go). saslStore holds the SASL credentials.
	kafkaTLS *tlsfiles.Source
	adminTLS *tlsfiles.Source
	raftTLS  *tlsfiles.Source // the Raft transport's (replication.go)
	// gossipRing is the gossip keyring (nil: plaintext gossip), shared by
	// Serf and the Raft transport's handshake; raftAgent is the agent as
	// the transport's goroutines read it, set once it exists
	// (replication.go).
	gossipRing *memberlist.Keyring
	raftAgent  atomic.Pointer[membership.Agent]
	// adminToken is the admin API's bearer token (nil: none), which the
	// node also presents to its peers (admin_access.go).
	adminToken *admin.Token
	saslStore  atomic.Pointer[sasl.Store]
	// saslView is saslStore with the cluster's users beneath (sasl_users.go).
	saslView atomic.Pointer[saslView]
	// authzView is the authorizer over the cluster's ACLs (authorize.go).
	authzView atomic.Pointer[authzView]
	// peerFetchFunc pulls state from peers' admin APIs (HTTP or HTTPS);
	// peers makes this node's other calls to them: replica snapshots,
	// transaction markers, move status (security.go: peerFetch).
	peerFetchFunc membership.FetchFunc
	peers         *peers.Client

	metrics  *admin.Metrics
	adminAPI *admin.API
	// console is the web console's history and timeline (node/console.go).
	console *console.Console
	stats   counters
	scrub   *scrub.Scrubber
	// flushedBytesOut is stats.bytesOut as of the last flushMetrics.
	flushedBytesOut int64
	// flushedQuotas are the quota rates' totals as of the last
	// flushMetrics (quota_enforce.go).
	flushedQuotas map[quotaMetricKey]quota.Total
	// flushedConnsThrottled is wire's ConnectionsThrottled as of the last
	// flushMetrics.
	flushedConnsThrottled int64
	// flushedSecurity are the security counters as of the last flushMetrics.
	flushedSecurity securityCounts
	// evenFactorWarned is how many even-factor topics the node last
	// warned of (replication_factor.go).
	evenFactorWarned atomic.Int64
	// repl feeds the replication metrics and /readyz (replication_metrics.go).
	repl *replicationTracker

	started  atomic.Bool
	ready    atomic.Bool
	adm      *admission.Admission // whether the cluster accepted this node
	shutOnce sync.Once
	// closeTook is how long Shutdown spent closing partitions (the bulk of
	// a stop on a node with thousands of them), for its benchmark.
	closeTook time.Duration
	// shutdownPoints are what the last stop left in the shutdown
	// checkpoint (node/hosted/shutdown_checkpoint.go), for the partitions
	// to open.
	shutdownPoints *hosted.ShutdownPoints
	// loops owns every background goroutine (background.go); closing is
	// its lifetime, closed when Shutdown begins, which also ends long polls.
	loops   *background
	closing <-chan struct{}
	// tier is tiered storage (tier.go), nil when off.
	tier *tierNode
}

// counters are the totals /v1/stats reports.
type counters struct {
	bytesIn, recordsIn, batchesIn atomic.Int64
	bytesOut                      atomic.Int64
	saslAuthentications           atomic.Int64
	saslFailures                  atomic.Int64
}

// New prepares a node: it creates the data directory and loads the catalog
// and producer-id counter, but opens no partition and binds no socket until
// Start.
func New(cfg Config) (_ *Node, err error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("node config: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = logrus.StandardLogger()
	}
	log = log.WithField("node", cfg.NodeID)
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	// Before anything in the data dir is read or written.
	lock, err := datadir.LockDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	n := &Node{
		cfg:          cfg,
		copyThrottle: newCopyThrottle(cfg.ReplicaCopyBytesPerSecond),
		log:          log,
		lock:         lock,
		files:        partition.NewFileCache(cfg.MaxOpenFiles),
		quarantine:   datadir.NewQuarantine(cfg.DataDir, log),
		loops:        newBackground(),
		adm:          admission.New(log),
		leaders:      newLeaders(cfg.NodeID),
	}
	n.closing = n.loops.ctx.Done()
	n.quotas = quota.New(cfg.Quota, quotaSource{n})
	n.parts = n.newPartitionSet()
	// Before any partition opens: the file vouches only for logs unchanged
	// since it was written.
	n.shutdownPoints = hosted.TakeShutdownCheckpoint(cfg.DataDir, log)

	if err := n.loadSecurity(); err != nil {
		return nil, err
	}

	pids, err := txn.OpenProducerIDs(filepath.Join(cfg.DataDir, producerIDsFileName), cfg.NodeID)
	if err != nil {
		return nil, err
	}
	n.coords = n.newCoordinators(pids)

	keys := make([]int16, 0, len(apis))
	for key := range apis {
		keys = append(keys, key)
	}
	if n.metrics, err = admin.NewMetrics(cfg.NodeID, keys); err != nil {
		return nil, err
	}
	if n.repl, err = newReplicationTracker(n.metrics.Registry); err != nil {
		return nil, fmt.Errorf("replication metrics: %w", err)
	}
	n.scrub = scrub.New(scrub.Config{
		Rate: cfg.ScrubRate, Interval: cfg.ScrubInterval,
		Targets: n.scrubTargets, Metrics: n.metrics.Metrics, Log: log,
		FindingsFile: filepath.Join(cfg.DataDir, scrubFindingsFileName),
	})
	return n, nil
}

// Start binds the Kafka and admin listeners, starts the membership agent
// (which joins the cluster in the background), opens every local partition
// the catalog gives this node and starts serving. It returns once the node
// listens; it serves Kafka requests, and /readyz says 200, only once the
// cluster accepted it (node/admission).
func (n *Node) Start() (err error) {
	if !n.started.CompareAndSwap(false, true) {
		return errors.New("node already started")
	}
	if err := n.bindListeners(); err != nil {
		return err
	}
	ln := n.listeners[0].ln
	n.kafkaLn = ln
	n.kafkaAddr = ln.Addr().String()
	defer func() {
		if err != nil {
			n.loops.stop()
			n.closeListeners()
			if n.adminLn != nil {
				n.adminLn.Close()
			}
			_ = n.stopParts()
		}
	}()
	if n.cfg.AdminAddr != "" {
		aln, err := net.Listen("tcp", n.cfg.AdminAddr)
		if err != nil {
			return fmt.Errorf("listen for admin http on %s: %w", n.cfg.AdminAddr, err)
		}
		n.adminLn = aln
		if n.adminTLS != nil {
			n.adminLn = tls.NewListener(aln, n.adminTLS.ServerConfig())
		}
	}
	// Tags carry the bound addresses, so the agent starts after the
	// listeners; partitions open after it, from its catalog.
	if err := n.startReplication(); err != nil {
		return err
	}
	if err := n.startMembership(); err != nil {
		return err
	}
	// Joining starts now, beside opening the partitions.
	n.loops.Go(func(ctx context.Context) {
		n.adm.Run(ctx, n.agent, len(n.cfg.Gossip.Join) > 0, n.loops.Go)
	})
	if err := n.startTier(); err != nil { // tier.go: before the partitions open
		return err
	}
	if err := n.removeOrphans(); err != nil {
		return err
	}
	if err := n.reconcile(); err != nil {
		return fmt.Errorf("open partitions: %w", err)
	}

	wcfg := wire.DefaultConfig()
	wcfg.MaxRequestBytes = n.cfg.MaxRequestBytes
	wcfg.QueuedMaxRequestBytes = n.cfg.QueuedMaxRequestBytes
	wcfg.RequestReadTimeout = n.cfg.RequestReadTimeout
	wcfg.Sendfile = n.cfg.Sendfile
	wcfg.Versions = Versions()
	wcfg.Waits = requestWaits
	if e, ok := n.log.(*logrus.Entry); ok {
		wcfg.Log = e
	} else {
		wcfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	// Requests pass only once the cluster has accepted this node.
	n.server = wire.NewServer(wcfg, admissionGate{n})

	n.metrics.SetGauge([]string{"partitions"}, float32(len(n.localPartitions())))
	n.metrics.SetGauge([]string{"partitions", "led"}, float32(n.partitionsLed()))
	n.warnEvenConfig()   // replication_factor.go: an even configured factor is lowered
	n.checkEvenFactors() // replication_factor.go: warns of even-factor topics at start
	n.startLoops()
	n.ready.Store(true)
	return nil
}

// startLoops starts the node's servers and background loops, every one
// under n.loops: they end when Shutdown stops it.
func (n *Node) startLoops() {
	n.console = n.newConsole()
	n.adminAPI = admin.New(admin.Config{
		Node: adminView{n}, Agent: n.agent, Quarantine: n.quarantine, Scrub: n.scrub,
		Metrics: n.metrics, Leadership: n.leaders.local, Snapshots: http.HandlerFunc(n.serveReplicaSnapshot), CaughtUp: http.HandlerFunc(n.serveReplicaCaughtUp), Txn: n.coords.Txns, Share: http.HandlerFunc(n.coords.Shares.ServeState), ShareGroups: http.HandlerFunc(n.coords.Shares.ServeDescribe), Pprof: n.cfg.EnablePprof, Log: n.log, Closing: n.closing,
		Access: n.adminAccess(), Rebalance: adminView{n}, Console: n.console,
	})
	n.loops.Go(n.recordMemberEvents) // console.go: the console's timeline
	if n.adminLn != nil {
		n.admin = &http.Server{Handler: n.adminAPI.Handler(), ReadHeaderTimeout: 10 * time.Second}
		n.loops.Go(func(context.Context) {
			if err := n.admin.Serve(n.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.WithError(err).Error("admin http server stopped")
			}
		})
	}
	for _, l := range n.listeners {
		opts := n.listenerOptions(l)
		n.loops.Go(func(context.Context) {
			if err := n.server.ServeListener(l.ln, opts); err != nil && !n.isClosing() {
				n.log.WithError(err).WithField("listener", l.Name).Error("kafka listener stopped")
			}
		})
	}
	n.startTLSReload()
	memberEvents, _ := n.agent.Subscribe() // closed by the agent's Shutdown
	n.loops.Go(n.catalog.Watch)
	n.loops.Go(n.catalogLoop)
	n.loops.Go(n.mover.Run)       // node/moves: the moves this node leads, step by step
	n.loops.Go(n.mover.RunStarts) // node/moves: drains, and rebalancing with AutoRebalance
	n.loops.Go(func(ctx context.Context) { n.membershipLoop(ctx, memberEvents) })
	n.loops.Every(admin.FlushInterval, n.flushMetrics)
	n.startReplicationMetrics() // replication_metrics.go
	n.loops.Every(n.cfg.RetentionCheckInterval, n.enforceRetention)
	n.loops.Every(txnCheckpointInterval, n.flushTxnIndexes)
	n.startCleaner()                                    // compaction.go: the log cleaner runs beside retention
	n.loops.Every(hosted.MendInterval, n.mendStopped)   // replicas stopped by a full disk (node/hosted's mend.go)
	n.loops.Every(hosted.MendInterval, n.repairDamaged) // damaged replicas rebuilt from peers (node/hosted's repair.go)
	n.loops.Go(n.scrub.Run)
	n.loops.Every(coord.LoadInterval, n.coords.Txns.LoadLed) // a new coordinator finishes what it inherits
	n.loops.Go(func(ctx context.Context) { n.quarantine.Reclaim(ctx, n.cfg.QuarantineRetention) })
	n.startLeadershipLoops()
	n.loops.Go(n.announceServing) // serving.go
	n.startTierLoops()            // tier.go: the uploader
}

// KafkaAddr is the bound Kafka listener address (after Start) or the
// configured one.
func (n *Node) KafkaAddr() string {
	if n.kafkaAddr != "" {
		return n.kafkaAddr
	}
	return n.cfg.KafkaAddr
}

// AdvertisedKafkaAddr is the address Metadata gives clients.
func (n *Node) AdvertisedKafkaAddr() string {
	if n.cfg.AdvertisedKafkaAddr != "" {
		return n.cfg.AdvertisedKafkaAddr
	}
	return n.KafkaAddr()
}

// AdminAddr is the bound admin HTTP address (after Start) or the configured one.
func (n *Node) AdminAddr() string {
	if n.adminLn != nil {
		return n.adminLn.Addr().String()
	}
	return n.cfg.AdminAddr
}

// NodeID is this broker's id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// Ready reports whether the node is listening with every partition open.
// It does not wait for the cluster join; /readyz does.
func (n *Node) Ready() bool { return n.ready.Load() }

// Membership is the node's membership agent (nil before Start).
func (n *Node) Membership() *membership.Agent { return n.agent }

func (n *Node) isClosing() bool {
	select {
	case <-n.closing:
		return true
	default:
		return false
	}
}

// Shutdown leaves the cluster gracefully (peers see this node "left" and
// stop sending clients here), stops accepting connections, lets in-flight
// requests finish (long polls return early with what they have), then
// flushes and closes every partition and stops gossip. If ctx ends first,
// remaining connections are cut.
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.shutOnce.Do(func() {
		n.ready.Store(false)
		// Every loop and long poll ends, joining included, before the
		// leave, so that nothing joins again after it.
		n.loops.stop()
		n.leaveCluster()
		var errs []error
		if n.server != nil {
			if e := n.server.Shutdown(ctx); e != nil {
				errs = append(errs, fmt.Errorf("kafka server: %w", e))
			}
		}
		if n.admin != nil {
			if e := n.admin.Shutdown(ctx); e != nil {
				n.admin.Close()
			}
		}
		errs = append(errs, n.stopParts())
		err = errors.Join(errs...)
	})
	return err
}

// stopParts stops what the node is built of, once its loops were told to
// stop and its listeners closed, in the one order Shutdown and a failed
// Start share: each part stops only after everything that uses it.
func (n *Node) stopParts() error {
	var errs []error
	n.loops.Wait()   // every loop, the servers' Serve among them
	n.flushMetrics() // what the last requests counted; the periodic flush has ended
	// The groups stop before their partitions close: a group still
	// running would answer the elections this node's leave starts
	// with a hard state fsync each, beside the closes.
	if n.raft != nil {
		n.raft.Stop()
	}
	closeStart := time.Now()
	if e := n.closePartitions(); e != nil {
		errs = append(errs, e)
	}
	n.closeTook = time.Since(closeStart)
	if e := n.stopReplication(); e != nil {
		errs = append(errs, e)
	}
	if e := n.stopMembership(); e != nil {
		errs = append(errs, e)
	}
	n.metrics.Shutdown()
	// Last: the data dir is free for another process only once every
	// partition is closed.
	if e := n.lock.Unlock(); e != nil {
		errs = append(errs, fmt.Errorf("unlock data dir: %w", e))
	}
	return errors.Join(errs...)
}

// enforceRetention enforces retention on every partition and expires idle
// producer state.
func (n *Node) enforceRetention() {
	cutoff := time.Now().Add(-n.cfg.ProducerIDExpiry)
	for _, p := range n.localPartitions() {
		deleted, err := p.Replica.EnforceRetention()
		if err != nil && !errors.Is(err, partition.ErrClosed) {
			n.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Warn("retention")
		}
		if deleted > 0 {
			n.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("segments", deleted).Info("retention deleted segments")
		}
		p.ExpireProducers(cutoff)
	}
	n.metrics.SetGauge([]string{"partitions"}, float32(len(n.localPartitions())))
}

// catalogLoop opens and closes local partitions when the catalog changes
// from elsewhere (the cluster layer's gossip).
func (n *Node) catalogLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.catalog.Changes():
		}
		if err := n.reconcile(); err != nil {
			n.log.WithError(err).Error("applying catalog change")
		}
		n.applyTopicConfigs()
		n.metrics.SetGauge([]string{"partitions"}, float32(len(n.localPartitions())))
		n.leadershipChanged() // partitions opened here lead at once
	}
}

// scrubTargets are the open partitions, for the scrubber.
func (n *Node) scrubTargets() []scrub.Target {
	parts := n.localPartitions()
	out := make([]scrub.Target, len(parts))
	for i, p := range parts {
		out[i] = scrub.Target{Topic: p.Topic, Partition: p.Index, Log: p.Replica}
	}
	return out
}
