package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/httpjson"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin/console"
	"github.com/spool-log/spool/node/datadir"
	"github.com/spool-log/spool/node/scrub"
)

// Node is what the admin API asks of the node it serves.
type Node interface {
	// Unfit is why the node must not run (the cluster refused its broker
	// id or name), or nil: /healthz.
	Unfit() error
	// Readiness is nil when the node serves clients: /readyz.
	Readiness() error
	Stats() Stats
	// Topics is the topic catalog as /v1/topics shows it.
	Topics() any
	// PartitionsLed counts, per live broker, the partitions it leads.
	PartitionsLed() map[int32]int
	// Leadership is who leads a partition as Metadata reports it from this
	// node: the leader (-1: none), its epoch (-1: unknown), ISR, offline.
	Leadership(topic string, partition int32) Leadership
}

// Leadership is one partition's leader as this node knows it.
type Leadership struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	Offline     []int32
}

// Config is what the admin API serves.
type Config struct {
	Node       Node
	Agent      *membership.Agent
	Quarantine *datadir.Quarantine
	Scrub      *scrub.Scrubber
	Metrics    *Metrics
	// Leadership serves this node's leadership claims to its peers.
	Leadership http.Handler
	// Snapshots serves a replica's Raft snapshot with its records to a
	// peer's follower (ReplicaSnapshotPath).
	Snapshots http.Handler
	// CaughtUp answers a damaged replica of a group this node leads
	// (ReplicaCaughtUpPath).
	CaughtUp http.Handler
	// Txn serves peers' transaction requests under TxnPath: markers a
	// peer's transaction coordinator has this partition leader write, and
	// a partition leader's check of a transactional batch with this
	// node's coordinator.
	Txn http.Handler
	// Share serves peers' share-group state requests under SharePath: a
	// share partition's leader claiming or writing its snapshot with the
	// leader of its __share_group_state partition (node/share: Node.ServeState).
	Share http.Handler
	// ShareGroups serves GET /v1/share-groups/{group}: the group's share
	// partitions this node leads, with their in-flight counts
	// (node/share: Node.ServeDescribe).
	ShareGroups http.Handler
	// Rebalance serves /v1/rebalance (rebalance.go); nil leaves it out.
	Rebalance Rebalancer
	// Console serves the live web console at "/" and its /v1/console/
	// JSON (console.go); nil leaves it out.
	Console *console.Console
	// Pprof serves Go's profiler under /debug/pprof/ (pprof.go).
	Pprof bool
	// Access decides who may change state and read (access.go); the zero
	// value lets everyone.
	Access Access
	Log    logrus.FieldLogger
	// Closing ends the member watch streams when the node shuts down.
	Closing <-chan struct{}
}

// API is the node's admin HTTP API.
type API struct{ cfg Config }

// New returns the admin API over cfg.
func New(cfg Config) *API { return &API{cfg: cfg} }

// Handler serves the admin HTTP API:
//
//	/healthz        200 while the process serves HTTP, 503 when the cluster
//	                refuses this node (duplicate broker id or name)
//	/readyz         200 once serving with every partition open and accepted
//	                by the cluster (node/admission.go), and every replica open
//	                at start caught up with its leader's commit point (a
//	                replica with no known leader only for two election
//	                timeouts; node/replication/readiness.go), else 503 with
//	                the reason
//	/metrics        Prometheus text of the node's go-metrics, Serf's and
//	                memberlist's included; the replication ones are listed
//	                in node/replication/metrics.go
//	/v1/stats       JSON counters (wire's sendfile and copy bytes included)
//	/v1/topics      JSON topic catalog
//	/v1/members     JSON members as gossip sees them (status, addresses, rack,
//	                partitions led)
//	/v1/members/watch  NDJSON stream of membership events, one per line
//	/v1/placement   JSON replicas and leader per partition (?topic=T for one
//	                topic) beside where rendezvous over today's roster would
//	                put them
//	/v1/share-groups/{group}  JSON share partitions of the share group this
//	                node leads: start offset, window end, in-flight count
//	/v1/roster      JSON roster (decommissioned ids included)
//	POST /v1/roster/decommission?id=N[&force=1|&cancel=1]  drains broker N,
//	                then removes it from the roster (or stops the drain)
//	/v1/roster/drain?id=N  JSON progress of broker N's drain
//	/v1/quarantine  JSON what the node set aside in DATA/quarantine (node/datadir);
//	                POST /v1/quarantine/purge[?older_than=D] deletes it for good
//	/v1/gossip-keys the gossip keyring's keys by fingerprint; POST
//	                /v1/gossip-keys/{install,use,remove} with {"key": ...}
//	                change it cluster-wide (gossipkeys.go)
//	/v1/scrub       the background scrubber's progress and findings (node/scrub)
//	/v1/rebalance   JSON moves under way with their progress; POST
//	                /v1/rebalance/pause and /v1/rebalance/resume (rebalance.go)
//	/               the live web console (console.go, package console), its
//	                files under /console/, its JSON under /v1/console/
//	/internal/membership/  catalog and roster for peers' anti-entropy
//	/debug/pprof/   Go profiling, only with Config.EnablePprof (404 otherwise);
//	                its /cmdline has secret flags redacted
//
// Config.Access guards every route but /healthz, /readyz and the console's
// page and files (access.go).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.cfg.Node.Unfit(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := a.cfg.Node.Readiness(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
		// Details that do not make the node unready (a tiered storage
		// backlog), one a line.
		if d, ok := a.cfg.Node.(interface{ ReadyDetails() []string }); ok {
			for _, line := range d.ReadyDetails() {
				w.Write([]byte(line + "\n"))
			}
		}
	})
	a.clusterRoutes(mux)    // cluster.go
	a.quarantineRoutes(mux) // quarantine.go: /v1/quarantine, /v1/quarantine/purge
	a.gossipKeyRoutes(mux)  // gossipkeys.go: /v1/gossip-keys
	a.scrubRoutes(mux)      // /v1/scrub
	a.rebalanceRoutes(mux)  // rebalance.go: /v1/rebalance, pause, resume
	a.consoleRoutes(mux)    // console.go: the web console at /, /v1/console/
	mux.Handle("/metrics", promhttp.HandlerFor(a.cfg.Metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, a.cfg.Node.Stats())
	})
	mux.HandleFunc("/v1/topics", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Write(w, a.cfg.Node.Topics())
	})
	if a.cfg.Pprof {
		pprofRoutes(mux) // pprof.go
	}
	return a.guard(mux)
}

// Stats is what /v1/stats reports.
type Stats struct {
	NodeID          int32  `json:"node_id"`
	KafkaAddr       string `json:"kafka_addr"`
	Ready           bool   `json:"ready"`
	Topics          int    `json:"topics"`
	Partitions      int    `json:"partitions"`
	BytesIn         int64  `json:"bytes_in"`
	RecordsIn       int64  `json:"records_in"`
	BatchesIn       int64  `json:"batches_in"`
	BytesOut        int64  `json:"bytes_out"`
	SendfileBytes   int64  `json:"sendfile_bytes"`
	CopyBytes       int64  `json:"copy_bytes"`
	RequestsTotal   int64  `json:"requests_total"`
	OpenConnections int64  `json:"open_connections"`
	OpenFiles       int    `json:"open_files"`
	// TLSHandshakeFailures counts Kafka connections cut off in the TLS
	// handshake (plaintext clients, refused client certificates);
	// SASLAuthentications and SASLAuthenticationFailures count SASL
	// exchanges completed and refused (re-authentications included).
	TLSHandshakeFailures       int64 `json:"tls_handshake_failures"`
	SASLAuthentications        int64 `json:"sasl_authentications"`
	SASLAuthenticationFailures int64 `json:"sasl_authentication_failures"`

	PartitionStats []PartitionStats `json:"partition_stats"`
}

// PartitionStats describes one local partition.
type PartitionStats struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
}

// scrubRoutes serves /v1/scrub: GET the status, POST to start a pass now
// (409 when the scrubber is off).
func (a *API) scrubRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/scrub", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			httpjson.Write(w, a.cfg.Scrub.Status())
		case http.MethodPost:
			if err := a.cfg.Scrub.Start(); err != nil {
				http.Error(w, err.Error(), http.StatusConflict)
				return
			}
			// The pass starts in the background; the reply is the status
			// as it stands, for a client that polls until passes grows.
			httpjson.Write(w, a.cfg.Scrub.Status())
		default:
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		}
	})
}
