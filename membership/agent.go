package membership

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/serf/serf"
	"github.com/sirupsen/logrus"
)

const (
	snapshotFile   = "serf.snapshot"
	rosterFileName = "roster.json"
	catalogFile    = "catalog.json"
)

// Agent is one node's membership: its Serf agent, roster and topic catalog.
// Create starts it; Join connects it to a cluster; Leave then Shutdown stop it
// gracefully (Shutdown alone looks like a crash to the others).
type Agent struct {
	cfg   Config
	log   logrus.FieldLogger
	serf  *serf.Serf
	gen   uint64
	guard *conflictGuard
	// rejoin is the rejoin of the snapshot's members (rejoin.go).
	rejoin *rejoin
	// raftAddrs keeps every broker's last Raft address (raftaddrs.go).
	raftAddrs *raftAddrBook

	roster      *Roster
	rosterPath  string
	catalog     *Catalog
	catalogPath string

	clusterIDPath string

	memberEvents *fanout[MemberEvent]
	topicEvents  *fanout[TopicChange]

	eventCh chan serf.Event
	syncCh  chan syncRequest
	// Shutdown ends the loops before what they use: shutdownCh stops the
	// sync loop (wg), which calls Serf, before Serf shuts down; the event
	// loop (eventWG) drains Serf's events until then (Serf blocks on a
	// full event channel), and stops at eventsDone.
	shutdownCh chan struct{}
	wg         sync.WaitGroup
	eventsDone chan struct{}
	eventWG    sync.WaitGroup

	localAddr atomic.Value // string, set once Serf is up
	alive     atomic.Pointer[aliveSnapshot]

	// The lock order and what each mutex guards are in doc.go.
	opMu      sync.Mutex // serialises local topic operations
	persistMu sync.Mutex // orders the saves of the roster, catalog and cluster id
	// catalogRetry holds peers' catalog entries whose save failed, merged
	// again each anti-entropy round (under persistMu).
	catalogRetry map[string]TopicEntry
	// users and acls are the catalog's entry sets as the agent changes
	// and spreads them (entry_kind.go); their retry maps are under
	// persistMu.
	users *entryKind[userKey, UserEntry]
	acls  *entryKind[ACLBinding, ACLEntry]
	// settings are the cluster settings (settings.go).
	settings *entryKind[string, SettingEntry]
	// quotas are the client quotas (quotas.go).
	quotas *entryKind[quotaKey, QuotaEntry]
	tagMu  sync.Mutex // orders republishing this node's tags (publishTags)

	// mu guards the small state below; it is held over memory only.
	mu      sync.Mutex
	cid     clusterID  // the cluster-wide id adopted (and saved) so far
	cidNext *clusterID // a winning id seen, adopted once saved
	cidFrom string     // the member cidNext came from
	// rosterPending holds roster entries seen but not yet saved, the
	// highest per id; the roster takes them only once the file does.
	rosterPending map[int32]RosterEntry
	joinErr       error
	shutdown      bool
	// leadershipTag is the "lv" tag value the node asked for (SetLeadershipTag).
	leadershipTag string
	// serving is set once the node serves Kafka requests (SetServing).
	serving bool
}

// Create starts a node's membership from cfg: it bumps the boot generation,
// loads the roster and catalog from DataDir, and starts Serf, which rejoins
// the peers of its snapshot by itself. It does not join cfg.Join; call Join.
func Create(cfg *Config) (*Agent, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	c := *cfg
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
	if c.Fetch == nil {
		c.Fetch = HTTPFetch(nil)
	}
	log := c.Log.WithFields(logrus.Fields{"node": c.NodeName, "broker": c.BrokerID})
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", c.DataDir, err)
	}
	a := &Agent{
		cfg:           c,
		log:           log,
		rosterPath:    filepath.Join(c.DataDir, rosterFileName),
		catalogPath:   filepath.Join(c.DataDir, catalogFile),
		clusterIDPath: filepath.Join(c.DataDir, clusterIDFile),
		eventCh:       make(chan serf.Event, 1024),
		syncCh:        make(chan syncRequest, 256),
		shutdownCh:    make(chan struct{}),
		eventsDone:    make(chan struct{}),
		users:         newUsersKind(),
		acls:          newACLsKind(),
		settings:      newSettingsKind(),
		quotas:        newQuotasKind(),
	}
	a.guard = newConflictGuard(a)
	a.rejoin = newRejoin()
	a.memberEvents = newFanout[MemberEvent](c.WatchQueueLimit, log, "member event")
	a.topicEvents = newFanout[TopicChange](c.WatchQueueLimit, log, "topic change")

	var err error
	if a.gen, err = bumpGeneration(c.DataDir); err != nil {
		return nil, err
	}
	if a.roster, err = loadRoster(a.rosterPath); err != nil {
		return nil, err
	}
	if a.raftAddrs, err = loadRaftAddrs(filepath.Join(c.DataDir, raftAddrsFile)); err != nil {
		return nil, err
	}
	a.observeRaftAddr(Member{BrokerID: c.BrokerID, Name: c.NodeName, RaftAddr: c.RaftAddr})
	a.roster.Add(c.BrokerID, a.gen)
	if err := saveRoster(a.rosterPath, a.roster); err != nil {
		return nil, err
	}
	if a.catalog, err = loadCatalog(a.catalogPath); err != nil {
		return nil, err
	}
	if a.cid, err = loadClusterID(a.clusterIDPath, &c); err != nil {
		return nil, err
	}
	tags, err := buildTags(&c, a.gen, a.roster.Digest(), a.cid.tag())
	if err != nil {
		return nil, err
	}
	sc, err := a.serfConfig(tags)
	if err != nil {
		return nil, err
	}
	prev, err := snapshotMembers(sc.SnapshotPath, c.NodeName)
	if err != nil {
		return nil, fmt.Errorf("read serf snapshot: %w", err)
	}
	if len(prev) > 0 {
		// Serf starts its own rejoin in Create: from then on this node is
		// joining (rejoin.go).
		a.guard.beginOutgoing()
	} else {
		a.rejoin.finish("", nil)
	}
	if a.serf, err = serf.Create(sc); err != nil {
		return nil, fmt.Errorf("start serf on %s:%d: %w", c.BindAddr, c.BindPort, err)
	}
	if len(prev) > 0 {
		// Not in wg: Shutdown stops memberlist, which ends the join.
		go a.rejoinSnapshot(prev)
	}
	local := a.serf.LocalMember()
	a.localAddr.Store(memberAddr(local.Addr, local.Port))
	a.guard.observe(local, false)

	a.eventWG.Add(1)
	go a.eventLoop()
	a.wg.Add(1)
	go a.syncLoop()
	log.WithFields(logrus.Fields{"gossip": a.localGossipAddr(), "gen": a.gen, "encrypted": sc.MemberlistConfig.Keyring != nil}).
		Info("membership started")
	return a, nil
}

func (a *Agent) serfConfig(tags map[string]string) (*serf.Config, error) {
	c := &a.cfg
	sc := serf.DefaultConfig()
	sc.NodeName = c.NodeName
	sc.Tags = tags
	sc.EventCh = a.eventCh
	sc.SnapshotPath = filepath.Join(c.DataDir, snapshotFile)
	// A broker restarted after SIGTERM comes back into its cluster from the
	// snapshot, like one restarted after a crash.
	sc.RejoinAfterLeave = true
	sc.Merge = a.guard
	sc.Logger = newStdLogger(a.log, "serf")
	if c.serfLog != nil {
		sc.Logger = c.serfLog
	}
	sc.ReapInterval = c.ReapInterval
	sc.ReconnectInterval = c.ReconnectInterval
	sc.ReconnectTimeout = c.ReconnectTimeout
	sc.TombstoneTimeout = c.TombstoneTimeout
	sc.LeavePropagateDelay = c.LeavePropagateDelay
	sc.BroadcastTimeout = c.BroadcastTimeout
	// Serf checks name+payload against the limit and then the encoded
	// message; leave room for the encoding.
	sc.UserEventSizeLimit = c.UserEventMaxBytes + 128
	// Query responses travel as single UDP packets.
	sc.QueryResponseSizeLimit = maxQueryBytes
	sc.QuerySizeLimit = maxQueryBytes

	ml := *c.Memberlist
	ml.Name = c.NodeName
	ml.BindAddr = c.BindAddr
	ml.BindPort = c.BindPort
	ml.AdvertiseAddr = c.AdvertiseAddr
	ml.AdvertisePort = c.AdvertisePort
	if c.AdvertisePort == 0 {
		ml.AdvertisePort = c.BindPort
	}
	ml.Logger = newStdLogger(a.log, "memberlist")
	ml.LogOutput = nil
	keyring, err := buildKeyring(c)
	if err != nil {
		return nil, err
	}
	ml.Keyring = keyring
	ml.SecretKey = nil
	ml.GossipVerifyIncoming = true
	ml.GossipVerifyOutgoing = true
	sc.MemberlistConfig = &ml
	if c.KeyringFile != "" && keyring != nil {
		sc.KeyringFile = c.KeyringFile
	}
	return sc, nil
}

func (a *Agent) localGossipAddr() string {
	s, _ := a.localAddr.Load().(string)
	return s
}

// Generation is this boot's generation ("gen" tag).
func (a *Agent) Generation() uint64 { return a.gen }

// Leave leaves the cluster gracefully: peers mark this node left, not failed.
// Call Shutdown afterwards.
func (a *Agent) Leave() error {
	if err := a.serf.Leave(); err != nil {
		return fmt.Errorf("leave cluster: %w", err)
	}
	return nil
}

// Shutdown stops gossip without leaving (peers will see this node fail,
// unless Leave ran first) and closes every subscription. Idempotent.
func (a *Agent) Shutdown() error {
	a.mu.Lock()
	if a.shutdown {
		a.mu.Unlock()
		return nil
	}
	a.shutdown = true
	a.mu.Unlock()
	close(a.shutdownCh)
	a.wg.Wait() // the sync loop, which calls Serf, first
	err := a.serf.Shutdown()
	close(a.eventsDone)
	a.eventWG.Wait()
	a.memberEvents.close()
	a.topicEvents.close()
	if err != nil {
		return fmt.Errorf("shutdown serf: %w", err)
	}
	return nil
}

// isShutdown reports whether Shutdown has begun.
func (a *Agent) isShutdown() bool {
	select {
	case <-a.shutdownCh:
		return true
	default:
		return false
	}
}

var errShutdown = errors.New("membership agent is shut down")
