// Package admin is a node's admin HTTP API and its metrics: the routes
// operators and peers call (health, readiness, stats, members, placement,
// roster, quarantine, scrub, the membership endpoints for anti-entropy,
// pprof, and the live web console of package console at "/"), the JSON types they answer with, and the metrics /metrics serves
// (go-metrics into a Prometheus registry, request latency histograms).
// It reads the node through the small Node interface and the parts it is
// given (membership agent, quarantine, scrubber); it owns no broker state.
package admin
