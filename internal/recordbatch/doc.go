// Package recordbatch is Kafka's RecordBatch v2 format (KIP-98), the one
// place in Spool that knows its bytes: the header layout, validation
// (length, magic 2, CRC-32C over attributes..end, record framing), the
// records inside a batch (zigzag varints, nullable keys and values,
// headers), and building a batch from records.
//
// It imports only the standard library. Compression codecs come in through
// the Codecs interface; internal/recordbatch/compression implements it with
// the libraries Kafka's clients use, so a package that only validates or
// splits batches (partition) need not link them.
package recordbatch
