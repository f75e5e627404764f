// Package bench is the load generator behind `spool bench`, usable from Go
// code: a load goes in, a Report comes out.
//
// It measures a running cluster — Produce, Consume and EndToEnd, with
// franz-go or (Raw) with pre-encoded requests on plain connections — and
// this machine's own limits with no broker in the way (Baseline: append,
// copy, round trip and three-process replication on loopback, against
// server processes of its own, ServeMain), so every figure can be read as a
// ratio to what the hardware does with nothing but write(2), fdatasync(2),
// sendfile(2) and loopback round trips.
// The machines these run on are shared and noisy: an absolute figure alone
// means little, a ratio measured in the same run means more.
//
// It owns what that takes: its own minimal Kafka framing for the raw client
// (ApiVersions, Produce and Fetch, with record batches skipped by their
// headers), the lock-free latency histograms, the baseline servers and the
// process that runs them, and the report (text or JSON). It knows nothing
// of cobra: cmd/spool maps flags onto these configs and prints the report;
// integration's benchmarks decode the same Report from `-o json`.
//
// Config fields are named after the flags of `spool bench`, and errors about
// them name those flags.
package bench
