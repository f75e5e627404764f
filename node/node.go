package node

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/admin/console"
	"github.com/spool-log/spool/node/admission"
	"github.com/spool-log/spool/node/background"
	"github.com/spool-log/spool/node/cluster"
	"github.com/spool-log/spool/node/compaction"
	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/datadir"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/leadership"
	"github.com/spool-log/spool/node/moves"
	"github.com/spool-log/spool/node/peers"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/node/replication"
	"github.com/spool-log/spool/node/scrub"
	"github.com/spool-log/spool/node/tier"
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

// Names the node's files share with its parts, and their types under the
// names the handlers use.
type (
	// TopicID is a topic's UUID: membership's (node/topics).
	TopicID = membership.TopicID
	// TopicSpec is one topic as the catalog records it (node/topics).
	TopicSpec = topics.Spec
	// Broker is one live broker as Metadata reports it (node/cluster).
	Broker = cluster.Broker
	// localPartition is a partition whose log lives here (node/hosted).
	localPartition = hosted.Partition
	// tp names one topic partition.
	tp struct {
		topic     string
		partition int32
	}
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
	cluster *cluster.View
	catalog *topics.Catalog
	leaders *leadership.Leaders // who leads what, cluster-wide (parts.go)

	// parts is the partitions open here, with their reconcile, how one
	// opens and their upkeep (node/hosted's Host; its locks).
	parts *hosted.Host
	// mover carries out moves: reassignments, drains, rebalancing
	// (node/moves; made with the agent, in startMembership).
	mover *moves.Mover
	// coords are the group, transaction and share-group coordinators,
	// each made on first use (node/coord; parts.go).
	coords *coord.Coordinators

	server    *wire.Server
	kafkaLn   net.Listener // the main listener's, listeners[0]
	kafkaAddr string
	admin     *http.Server
	adminLn   net.Listener

	// access is who a connection is and what it may do: the Kafka
	// listeners, SASL, the authorizer, client quotas, and the TLS, admin
	// token and SASL material with its reload (node/access; parts.go).
	access *access.Guard
	// gossipRing is the gossip keyring (nil: plaintext gossip), shared by
	// Serf and the Raft transport's handshake (parts.go).
	gossipRing *memberlist.Keyring
	// peerFetchFunc pulls state from peers' admin APIs (HTTP or HTTPS);
	// peers makes this node's other calls to them: replica snapshots,
	// transaction markers, move status (both made by node/access).
	peerFetchFunc membership.FetchFunc
	peers         *peers.Client

	metrics  *admin.Metrics
	adminAPI *admin.API
	// console is the web console's history and timeline (node/admin/console).
	console *console.Console
	stats   counters
	scrub   *scrub.Scrubber
	// flushedBytesOut is what flushMetrics handed go-metrics of stats'
	// bytesOut (spool_fetch_bytes).
	flushedBytesOut admin.Delta
	// repl is the Raft driver and transport with the replication metrics
	// and /readyz's catch-up gate (node/replication; parts.go).
	repl *replication.Replication
	// cleaner compacts the logs of compacted topics (node/compaction).
	cleaner *compaction.Cleaner

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
	// loops owns every background goroutine (node/background); closing is
	// its lifetime, closed when Shutdown begins, which also ends long polls.
	loops   *background.Group
	closing <-chan struct{}
	// tier is tiered storage (node/tier), nil when off.
	tier *tier.Service
}

// counters are the totals /v1/stats reports.
type counters struct {
	bytesIn, recordsIn, batchesIn atomic.Int64
	bytesOut                      atomic.Int64
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
		cfg:        cfg,
		log:        log,
		lock:       lock,
		files:      partition.NewFileCache(cfg.MaxOpenFiles),
		quarantine: datadir.NewQuarantine(cfg.DataDir, log),
		loops:      background.New(),
		adm:        admission.New(log),
	}
	n.closing = n.loops.Context().Done()
	n.leaders = n.newLeaders()
	// Before any partition opens: the file vouches only for logs unchanged
	// since it was written.
	n.shutdownPoints = hosted.TakeShutdownCheckpoint(cfg.DataDir, log)

	if err := n.newAccess(); err != nil { // parts.go
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
	if n.repl, err = n.newReplication(); err != nil {
		return nil, err
	}
	n.cleaner = n.newCleaner()
	n.scrub = scrub.New(scrub.Config{
		Rate: cfg.ScrubRate, Interval: cfg.ScrubInterval,
		Targets: func() []scrub.Target { return n.parts.ScrubTargets() }, Metrics: n.metrics.Metrics, Log: log,
		FindingsFile: filepath.Join(cfg.DataDir, scrubFindingsFileName),
	})
	// The partitions this node hosts, over its catalog; the agent, the
	// Raft driver, the catalog and the mover exist only from Start.
	n.parts = hosted.NewHost(hosted.HostConfig{
		Self: cfg.NodeID, DataDir: cfg.DataDir, Topic: cfg.Topic, RemoteStore: cfg.Tier.Store.Endpoint != "", Files: n.files,
		Quarantine: n.quarantine, Scrub: n.scrub, ShutdownPoints: n.shutdownPoints,
		Catalog: func() hosted.Catalog { return n.catalog },
		Alive:   func(id int32) bool { return n.agent.IsAlive(id) },
		Driver:  func() *replica.Driver { return n.repl.Driver() },
		Remote:  n.remoteLog, // node/tier
		StillVoting: func(p *localPartition) bool {
			return n.mover.StillVoting(moves.FromHosted(p))
		},
		Create: hosted.CreateConfig{
			DefaultPartitions: cfg.DefaultPartitions, DefaultReplicationFactor: func() int16 { return n.repl.DefaultFactor() },
			EvenFactor: replication.EvenFactorReason, // node/replication's factor.go
			Place: func(topic string, partitions int32, rf int16) ([][]int32, error) {
				return n.cluster.Place(topic, partitions, rf)
			},
			Live:     func() int { return len(n.agent.LiveBrokers()) },
			Internal: func(string) error { _, err := n.coords.Groups.Get(); return err }, // node/coord
		},
		Repair: n.repairConfig(), Log: log,
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
	if err := n.access.BindListeners(); err != nil {
		return err
	}
	ln := n.access.Listeners()[0].Net
	n.kafkaLn = ln
	n.kafkaAddr = ln.Addr().String()
	defer func() {
		if err != nil {
			n.loops.Stop()
			n.access.CloseListeners()
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
		if adminTLS := n.access.AdminTLS(); adminTLS != nil {
			n.adminLn = tls.NewListener(aln, adminTLS.ServerConfig())
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
	// Tiered storage before the partitions open: each gets its manifest.
	if n.tier, err = tier.New(n.loops.Context(), n.cfg.Tier, n.cfg.DataDir, n.tierHosted, n.log.WithField("part", "tier"), n.metrics.Metrics); err != nil {
		return err
	}
	if err := n.parts.RemoveOrphans(); err != nil {
		return err
	}
	if err := n.parts.Reconcile(""); err != nil {
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
	n.server = wire.NewServer(wcfg, n.adm.Gate(n))

	n.metrics.SetGauge([]string{"partitions"}, float32(len(n.parts.All())))
	n.metrics.SetGauge([]string{"partitions", "led"}, float32(n.parts.Led()))
	n.repl.WarnEvenConfig()   // node/replication's factor.go: an even configured factor is lowered
	n.repl.CheckEvenFactors() // node/replication's factor.go: warns of even-factor topics at start
	n.startLoops()
	n.ready.Store(true)
	return nil
}

// startLoops starts the node's servers and background loops, every one
// under n.loops: they end when Shutdown stops it.
func (n *Node) startLoops() {
	ccfg := console.DefaultConfig()
	ccfg.Source = console.NodeSource{Hosted: n.parts.All, Coordinator: func() console.Coordinator {
		if c, ok := n.coords.Groups.Current(); ok {
			return c
		}
		return nil // no group request yet: this node coordinates none
	}}
	ccfg.Peers = console.NodePeers{Self: n.cfg.NodeID, Live: n.agent.LiveBrokers, GetJSON: n.peers.GetJSON}
	ccfg.NodeID, ccfg.Closing = n.cfg.NodeID, n.closing
	n.console = console.New(ccfg)
	view := admin.View{
		WhyUnfit:    func() error { return n.adm.Unfit(n.agent.Health) },
		WhyNotReady: n.readiness, Counters: n.Stats,
		Catalog: func() any { return n.catalog.Topics() },
		Led:     func() map[int32]int { return n.cluster.PartitionsLed(n.catalog.Topics()) },
		Leader: func(topic string, partition int32) admin.Leadership {
			spec, ok := n.catalog.Topic(topic)
			if !ok || partition < 0 || int(partition) >= len(spec.Replicas) {
				return admin.Leadership{Leader: -1, LeaderEpoch: -1}
			}
			st := n.leaders.Of(spec, partition, n.agent.IsAlive)
			return admin.Leadership{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ISR: st.ISR, Offline: st.Offline}
		},
		Status: n.mover.Status, Pause: n.agent.SetRebalancePaused,
		Details: n.tier.ReadyDetails, // node/tier: the upload backlog
	}
	n.adminAPI = admin.New(admin.Config{
		Node: view, Agent: n.agent, Quarantine: n.quarantine, Scrub: n.scrub,
		Metrics: n.metrics, Leadership: n.leaders.Local(), Snapshots: http.HandlerFunc(n.repl.ServeSnapshot), CaughtUp: http.HandlerFunc(n.repl.ServeCaughtUp), Txn: n.coords.Txns, Share: http.HandlerFunc(n.coords.Shares.ServeState), ShareGroups: http.HandlerFunc(n.coords.Shares.ServeDescribe), Pprof: n.cfg.EnablePprof, Log: n.log, Closing: n.closing,
		Access: n.access.AdminAccess(), Rebalance: view, Console: n.console,
	})
	n.loops.Go(func(ctx context.Context) { n.adminAPI.RecordMemberEvents(ctx, n.agent.Subscribe, n.console) }) // the console's timeline
	if n.adminLn != nil {
		n.admin = &http.Server{Handler: n.adminAPI.Handler(), ReadHeaderTimeout: 10 * time.Second}
		n.loops.Go(func(context.Context) {
			if err := n.admin.Serve(n.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				n.log.WithError(err).Error("admin http server stopped")
			}
		})
	}
	for _, l := range n.access.Listeners() {
		opts := n.access.ListenerOptions(l)
		n.loops.Go(func(context.Context) {
			if err := n.server.ServeListener(l.Net, opts); err != nil && !n.isClosing() {
				n.log.WithError(err).WithField("listener", l.Name).Error("kafka listener stopped")
			}
		})
	}
	n.access.WatchTLS(n.loops.Go)
	memberEvents, _ := n.agent.Subscribe() // closed by the agent's Shutdown
	n.loops.Go(n.catalog.Watch)
	n.loops.Go(func(ctx context.Context) { // gossip's catalog changes, applied here
		n.parts.FollowCatalog(ctx, n.catalog.Changes(), func() {
			n.metrics.SetGauge([]string{"partitions"}, float32(len(n.parts.All())))
			n.leaders.Changed() // partitions opened here lead at once
		})
	})
	n.loops.Go(n.mover.Run)                // node/moves: the moves this node leads, step by step
	n.loops.Go(n.mover.RunStarts)          // node/moves: drains, and rebalancing with AutoRebalance
	n.loops.Go(func(ctx context.Context) { // the partitions-led gauge, as members come and go
		cluster.FollowMembers(ctx, memberEvents, func(ev membership.MemberEvent) {
			n.repl.HintMember(ev)
			led := n.parts.Led()
			n.metrics.SetGauge([]string{"partitions", "led"}, float32(led))
			n.log.WithFields(logrus.Fields{"member": ev.Member.Name, "member_broker": ev.Member.BrokerID, "event": ev.Type, "partitions_led": led}).
				Debug("cluster view changed")
		})
	})
	n.loops.Every(admin.FlushInterval, n.flushMetrics)
	n.repl.MarkStartup() // node/replication's metrics.go: the replicas that hold readiness
	n.loops.Every(replication.SampleInterval, n.repl.Sample)
	n.loops.Every(n.cfg.RetentionCheckInterval, func() {
		n.parts.EnforceRetention(time.Now().Add(-n.cfg.ProducerIDExpiry))
		n.metrics.SetGauge([]string{"partitions"}, float32(len(n.parts.All())))
	})
	n.loops.Every(hosted.TxnCheckpointInterval, n.parts.FlushTxnIndexes)
	n.loops.Go(n.cleaner.Run)                   // node/compaction: the log cleaner runs beside retention
	n.loops.Every(hosted.MendInterval, func() { // replicas stopped by a full disk (node/hosted's mend.go)
		n.parts.Mend(func(stopped int) {
			n.metrics.SetGauge([]string{"replication", "stopped_replicas"}, float32(stopped))
		})
	})
	n.loops.Every(hosted.MendInterval, func() { n.parts.Repair(n.loops.Context()) }) // damaged replicas rebuilt from peers (node/hosted's repair.go)
	n.loops.Go(n.scrub.Run)
	n.loops.Every(coord.LoadInterval, n.coords.Txns.LoadLed) // a new coordinator finishes what it inherits
	n.loops.Go(func(ctx context.Context) { n.quarantine.Reclaim(ctx, n.cfg.QuarantineRetention) })
	n.leaders.Start(n.agent, n.loops.Go)
	n.loops.Go(func(ctx context.Context) { // node/admission's serving.go
		n.adm.AnnounceServing(ctx, n.ready.Load, n.agent.SetServing)
	})
	n.loops.Go(n.tier.RunUploader) // node/tier
	n.loops.Every(admin.FlushInterval, n.tier.FlushMetrics)
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

// Failed delivers, once, the reason the node cannot serve: the cluster
// refused it (node/admission). The node then refuses every Kafka request
// and /readyz and /healthz say why; the caller should shut it down and exit.
func (n *Node) Failed() <-chan error { return n.adm.Failed() }

// Admitted reports whether the cluster accepted this node, so that it
// serves Kafka requests.
func (n *Node) Admitted() bool { return n.adm.Admitted() }

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
		n.loops.Stop()
		cluster.Leave(n.agent, n.adm.Refusal() != nil, n.log)
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
	n.repl.StopGroups()
	closeStart := time.Now()
	// Each close makes what its partition wrote durable; what each used to
	// record for a quick restart goes into one shutdown checkpoint for the
	// data dir, written last (node/hosted's shutdown_checkpoint.go).
	if e := n.parts.Close(n.cfg.DataDir, n.shutdownPoints); e != nil {
		errs = append(errs, e)
	}
	n.closeTook = time.Since(closeStart)
	if e := n.repl.Stop(); e != nil {
		errs = append(errs, e)
	}
	if e := cluster.Stop(n.agent); e != nil {
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

// startMembership starts the agent (node/cluster), joining in the
// background, and what is made over it: the cluster view, the catalog and
// the mover (node/moves), before the first reconcile asks StillVoting.
func (n *Node) startMembership() error {
	// Serf's and memberlist's metrics go through the global go-metrics.
	if err := n.metrics.SetGlobal(); err != nil {
		return err
	}
	agent, err := cluster.Start(cluster.Node{
		Gossip: n.cfg.Gossip, ID: n.cfg.NodeID, Rack: n.cfg.Rack, DataDir: n.cfg.DataDir,
		KafkaAddr: n.AdvertisedKafkaAddr(), Listeners: n.access.AdvertisedListeners(), AdminAddr: n.AdminAddr(),
		RaftAddr: n.repl.AdvertisedAddr(), Fetch: n.peerFetchFunc,
		Keyring: n.gossipRing, // shared with the Raft transport (parts.go)
		Log:     n.log,
	})
	if err != nil {
		return err
	}
	n.agent = agent
	n.repl.SetAgent(agent)
	n.access.SetCatalog(agent) // node/access: the cluster's ACLs, users and quotas
	n.cluster = cluster.NewView(agent, n.cfg.NodeID)
	n.catalog = topics.NewCatalog(agent, n.cfg.NodeID, n.log)
	n.mover = moves.New(moves.Config{
		Self: n.cfg.NodeID, Cluster: agent,
		Alter: func(topic string, change func(*membership.TopicEntry) error) error {
			_, err := n.catalog.Alter(topic, change)
			return err
		},
		Hosted: func(topic string, index int32, id membership.TopicID) (moves.Hosted, bool) {
			if p := n.parts.Current(topic, index, id); p != nil {
				return moves.FromHosted(p), true
			}
			return moves.Hosted{}, false
		},
		AllHosted: func() []moves.Hosted { return moves.AllFromHosted(n.parts.All()) },
		Claim: func(id membership.TopicID, index int32) (moves.Claim, bool) {
			c, ok := n.leaders.Lookup(id, index)
			return moves.Claim{Leader: c.Leader, Voters: c.Voters, ISR: c.ISR}, ok
		},
		LeaderOf: func(e membership.TopicEntry, index int32) int32 {
			return n.leaders.LeaderOf(topics.FromEntry(e), index)
		},
		GetJSON: n.peers.GetJSON, AutoRebalance: n.cfg.AutoRebalance, FailedBrokerGrace: n.cfg.FailedBrokerGrace,
		MaxMoves: n.cfg.RebalanceMaxMoves, Metrics: n.metrics, Log: n.log,
	})
	return nil
}

// flushMetrics emits what was counted since the last flush (admin.Delta's doc).
func (n *Node) flushMetrics() {
	m := n.metrics
	n.flushedBytesOut.Flush(m, []string{"fetch", "bytes"}, n.stats.bytesOut.Load())
	n.access.FlushSecurityMetrics(m)      // node/access
	n.coords.Txns.FlushMetrics(n.metrics) // node/coord
	if n.mover != nil {
		n.mover.FlushMetrics() // node/moves
	}
	n.access.FlushQuotaMetrics(m)           // node/access
	n.coords.Shares.FlushMetrics(n.metrics) // node/share
	n.repl.CheckEvenFactors()               // node/replication's factor.go
	n.parts.FlushProduced(m)
}

// Stats returns the node's counters (/v1/stats).
func (n *Node) Stats() admin.Stats {
	s := admin.Stats{
		NodeID: n.cfg.NodeID, KafkaAddr: n.KafkaAddr(), Ready: n.Ready(), Topics: len(n.catalog.Topics()),
		BytesIn: n.stats.bytesIn.Load(), RecordsIn: n.stats.recordsIn.Load(), BatchesIn: n.stats.batchesIn.Load(),
		BytesOut: n.stats.bytesOut.Load(), OpenFiles: n.files.OpenFiles(),
	}
	s.SASLAuthentications, s.SASLAuthenticationFailures = n.access.SASLCounts()
	if n.server != nil {
		ws := n.server.Stats()
		s.SendfileBytes, s.CopyBytes = int64(ws.SendfileBytes), int64(ws.CopyBytes)
		s.RequestsTotal, s.OpenConnections = int64(ws.RequestsTotal), int64(ws.OpenConnections)
		s.TLSHandshakeFailures = ws.TLSHandshakeFailures
	}
	for _, p := range n.parts.All() {
		s.PartitionStats = append(s.PartitionStats, admin.PartitionStats{
			Topic: p.Topic, Partition: p.Index,
			StartOffset: p.Replica.LogStartOffset(), EndOffset: p.Replica.LogEndOffset(),
		})
	}
	slices.SortFunc(s.PartitionStats, func(a, b admin.PartitionStats) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	s.Partitions = len(s.PartitionStats)
	return s
}

var errNotReady = errors.New("starting or shutting down") // a 503 from /readyz

// readiness is nil when the node serves clients and its membership is sound:
// the cluster accepted it (node/admission) and gossip shows no conflict,
// its hosted partitions are up (node/hosted), and the replicas open at
// startup have caught up with their leaders (replication_readiness.go).
func (n *Node) readiness() error {
	if !n.Ready() {
		return errNotReady
	}
	var health func() error
	if n.agent != nil {
		health = n.agent.Health
	}
	if err := n.adm.Soundness(health); err != nil {
		return err
	}
	if err := n.parts.Health(); err != nil {
		return err
	}
	return n.repl.Readiness() // replication_readiness.go
}

// remoteLog is a partition's remote side as its replica opens
// (hosted.HostConfig.Remote): the manifest of what node/tier uploaded,
// after restoring a new replica of a topic with remote.storage.recovery
// from the store (node/tier's restore.go) when it starts its group afresh
// with no Raft state and an empty log.
func (n *Node) remoteLog(o hosted.RemoteOpen) (replica.RemoteLog, error) {
	if o.Settings.RemoteRecovery && o.Fresh {
		started, err := raftlog.HasState(o.Dir)
		if err != nil {
			return nil, err
		}
		if !started && o.Log.EndOffset() == 0 {
			seed := func(b []byte) error { return hosted.WriteProducerSeed(o.Dir, b) }
			if _, err := n.tier.Restore(o.Dir, o.Topic, o.Index, o.Log, seed); err != nil {
				return nil, err
			}
		}
	}
	m, err := n.tier.OpenManifest(o.Dir, o.Settings.RemoteStorage)
	if m == nil || err != nil {
		return nil, err
	}
	return m, nil
}

// tierHosted are the open partitions as node/tier sees them.
func (n *Node) tierHosted() []tier.Hosted {
	parts := n.parts.All()
	out := make([]tier.Hosted, 0, len(parts))
	for _, p := range parts {
		out = append(out, tier.Hosted{Dir: p.Dir, Topic: p.Topic, Index: p.Index, Source: p.Replica,
			Aborted: segmentAborted(p), ProducerSnapshot: segmentProducers(p, n.cfg.ProducerIDExpiry), Settings: p.CurrentSettings,
			SeedProducers: func(b []byte) error { return hosted.WriteProducerSeed(p.Dir, b) }})
	}
	return out
}

// segmentProducers is p's producer snapshot as of a segment's end, for its
// upload (node/hosted's SnapshotAt), producers idle past
// producer.id.expiration.ms left out.
func segmentProducers(p *hosted.Partition, expiry time.Duration) tier.ProducerSnapshotFunc {
	return func(prev []byte, next int64) ([]byte, error) {
		now := time.Now()
		return hosted.SnapshotAt(p.Replica, prev, next, now, now.Add(-expiry))
	}
}

// segmentAborted is p's aborted transactions for a segment's upload, from
// its transaction index brought up to the high watermark: not yet (ok
// false) while the last stable offset is below the segment's end.
func segmentAborted(p *hosted.Partition) tier.AbortedFunc {
	return func(base, next int64) ([]tier.AbortedTxn, bool, error) {
		if err := p.Txns.Refresh(p.Replica, p.Dir); err != nil {
			return nil, false, err
		}
		if p.Txns.StableOffset(p.Replica.HighWatermark(), p.Replica.LogStartOffset()) < next {
			return nil, false, nil
		}
		var out []tier.AbortedTxn
		for _, a := range p.Txns.AbortedTxnsBetween(base, next) {
			out = append(out, tier.AbortedTxn(a))
		}
		return out, true, nil
	}
}

// remote is p's remote side in the store (node/tier), below its local start.
func (n *Node) remote(p *hosted.Partition) tier.View {
	return n.tier.View(p.Dir, p.Topic, p.Index, p.Replica)
}
