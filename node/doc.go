// Package node is Spool's broker: it owns the topic catalog and the local
// partition logs, answers the Kafka APIs that clients send through package
// wire (produce, fetch, list offsets, metadata, topic admin, producer ids),
// runs retention, and serves the admin HTTP endpoints (/healthz, /readyz,
// /metrics, /v1/stats, /debug/pprof/).
//
// Each Kafka API has its own file named after its key (00_produce.go,
// 01_fetch.go, ...), kfake style; apis.go holds the one table of supported
// versions and the dispatch. Cluster-wide knowledge (which brokers are alive,
// which replicas a partition has) comes through the Cluster and Catalog
// interfaces so that the membership layer can replace the single-node
// implementations without touching the handlers.
package node
