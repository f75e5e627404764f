package node

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminHandler serves the admin HTTP API:
//
//	/healthz        200 while the process serves HTTP, 503 when the cluster
//	                refuses this node (duplicate broker id or name)
//	/readyz         200 once serving with every partition open and accepted
//	                by the cluster (admission.go), else 503 with the reason
//	/metrics        Prometheus text of the node's go-metrics, Serf's and
//	                memberlist's included
//	/v1/stats       JSON counters (wire's sendfile and copy bytes included)
//	/v1/topics      JSON topic catalog
//	/v1/members     JSON members as gossip sees them (status, addresses, rack,
//	                partitions led)
//	/v1/members/watch  NDJSON stream of membership events, one per line
//	/v1/placement   JSON replicas and leader per partition (?topic=T for one
//	                topic) beside where rendezvous over today's roster would
//	                put them
//	/v1/roster      JSON roster (decommissioned ids included)
//	POST /v1/roster/decommission?id=N  removes a stopped broker from the roster
//	/v1/quarantine  JSON what the node set aside in DATA/quarantine (quarantine.go);
//	                POST /v1/quarantine/purge[?older_than=D] deletes it for good
//	/v1/scrub       the background scrubber's progress and findings (scrub.go)
//	/internal/membership/  catalog and roster for peers' anti-entropy
//	/debug/pprof/   Go profiling, only with Config.EnablePprof (404 otherwise);
//	                its /cmdline has secret flags redacted
func (n *Node) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := n.refused(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := n.agent.Health(); err != nil && isRefusal(err) {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := n.readiness(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	n.clusterAdminRoutes(mux)
	n.quarantineAdminRoutes(mux) // /v1/quarantine, /v1/quarantine/purge
	n.scrubAdminRoutes(mux)      // /v1/scrub: scrub.go
	mux.Handle("/metrics", promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, n.Stats())
	})
	mux.HandleFunc("/v1/topics", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, n.catalog.Topics())
	})
	if n.cfg.EnablePprof {
		pprofRoutes(mux) // pprof.go
	}
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
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

	PartitionStats []PartitionStats `json:"partition_stats"`
}

// PartitionStats describes one local partition.
type PartitionStats struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	s := Stats{
		NodeID:    n.cfg.NodeID,
		KafkaAddr: n.KafkaAddr(),
		Ready:     n.Ready(),
		Topics:    len(n.catalog.Topics()),
		BytesIn:   n.stats.bytesIn.Load(),
		RecordsIn: n.stats.recordsIn.Load(),
		BatchesIn: n.stats.batchesIn.Load(),
		BytesOut:  n.stats.bytesOut.Load(),
		OpenFiles: n.files.OpenFiles(),
	}
	if n.server != nil {
		ws := n.server.Stats()
		s.SendfileBytes = int64(ws.SendfileBytes)
		s.CopyBytes = int64(ws.CopyBytes)
		s.RequestsTotal = int64(ws.RequestsTotal)
		s.OpenConnections = int64(ws.OpenConnections)
	}
	for _, p := range n.localPartitions() {
		s.PartitionStats = append(s.PartitionStats, PartitionStats{
			Topic: p.topic, Partition: p.index,
			StartOffset: p.replica.LogStartOffset(), EndOffset: p.replica.LogEndOffset(),
		})
	}
	sort.Slice(s.PartitionStats, func(i, j int) bool {
		a, b := s.PartitionStats[i], s.PartitionStats[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	s.Partitions = len(s.PartitionStats)
	return s
}
