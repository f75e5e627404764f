// Package wire owns Spool's side of the Apache Kafka wire protocol: the
// size-prefixed framing with its request bound, request and response headers
// (v0–v2 and v0–v1, flexible tagged fields included), decoding requests and
// encoding responses with franz-go's kmsg, the per-connection loop that reads
// ahead while answering strictly in request order, the ApiVersions exchange,
// and the hand-written Fetch response whose record bytes travel from segment
// files to the socket with sendfile(2). Across connections, the memory of
// requests being read and queued is bounded (Config.QueuedMaxRequestBytes),
// and a request that has begun must arrive within Config.RequestReadTimeout.
//
// wire knows nothing of topics, partitions' placement or storage: a Handler
// (the broker in package node) turns each decoded Request into a Response.
package wire
