package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// The log cleaner: one goroutine per node compacts the logs of compacted
// topics (cleanup.policy containing "compact"; __consumer_offsets is one),
// as Kafka's LogCleaner does with log.cleaner.threads=1. Each pass cleans,
// filthiest first, every local log whose dirty ratio reached its topic's
// min.cleanable.dirty.ratio or that holds tombstones past their delete
// horizon. The partition package does the cleaning; this file decides when,
// and gives it the compression codecs it may not import itself.

const (
	// cleanerBackoff is how long the cleaner sleeps between passes
	// (log.cleaner.backoff.ms), unless the retention interval is shorter.
	cleanerBackoff = 15 * time.Second
	// cleanerMapBytes bounds the key map of one cleaning
	// (log.cleaner.dedupe.buffer.size, 128 MiB in Kafka across all threads).
	cleanerMapBytes = 64 << 20
)

// startCleaner starts the node's cleaner goroutine; it stops when the node
// closes. Called from the retention loop, whose n.loops count it joins.
func (n *Node) startCleaner() {
	n.loops.Add(1)
	go n.cleanerLoop()
}

func (n *Node) cleanerLoop() {
	defer n.loops.Done()
	t := time.NewTicker(min(cleanerBackoff, n.cfg.RetentionCheckInterval))
	defer t.Stop()
	for {
		select {
		case <-n.closing:
			return
		case <-t.C:
		}
		n.cleanLogs()
	}
}

// cleanLogs runs one cleaner pass and returns how many logs it cleaned. A
// pass forced beside the background one (tests) is safe: Log.Clean runs
// one cleaning at a time per log.
func (n *Node) cleanLogs() int {
	type candidate struct {
		p     *localPartition
		ratio float64
	}
	var cands []candidate
	for _, p := range n.localPartitions() {
		if p.replica.NeedsCleaning() {
			ratio, _ := p.replica.DirtyRatio()
			cands = append(cands, candidate{p, ratio})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	cleaned := 0
	for _, c := range cands {
		if n.isClosing() {
			break
		}
		if n.cleanLog(c.p) {
			cleaned++
		}
	}
	return cleaned
}

// cleanLog cleans one partition's log up to its high watermark.
func (n *Node) cleanLog(p *localPartition) bool {
	log := n.log.WithFields(logrus.Fields{"topic": p.topic, "partition": p.index})
	start := time.Now()
	// Up to the replica's high watermark (the commit point), so no follower
	// is ever asked to keep what the leader cleaned away before it was
	// committed.
	st, err := p.replica.Clean(cleanerMapBytes)
	switch {
	case errors.Is(err, partition.ErrCleanAborted) || errors.Is(err, partition.ErrClosed):
		log.WithError(err).Debug("log cleaning abandoned")
		return false
	case err != nil:
		log.WithError(err).Warn("log cleaning failed")
		n.metrics.IncrCounter([]string{"cleaner", "errors"}, 1)
		return false
	case st.Segments == 0:
		return false // the dirty segments are not yet flushed; the next pass gets them
	}
	n.metrics.IncrCounter([]string{"cleaner", "runs"}, 1)
	n.metrics.IncrCounter([]string{"cleaner", "bytes", "freed"}, float32(st.BytesBefore-st.BytesAfter))
	log.WithFields(logrus.Fields{
		"segments": st.Segments, "written": st.SegmentsWritten,
		"bytes_before": st.BytesBefore, "bytes_after": st.BytesAfter,
		"records": st.Records, "kept": st.RecordsKept, "tombstones_removed": st.TombstonesRemoved,
		"dirty_from": st.DirtyFrom, "dirty_to": st.DirtyTo, "took": time.Since(start),
	}).Info("cleaned log")
	return true
}

// kafkaCodecs is partition.Codecs with the codec libraries the node uses,
// writing the framings Kafka's clients read: gzip, snappy in xerial framing
// (what the Java producer writes), LZ4 frames and zstd.
type kafkaCodecs struct{}

var _ partition.Codecs = kafkaCodecs{}

func (kafkaCodecs) Decompress(codec int, src []byte, limit int) ([]byte, error) {
	out, err := decompress(src, codec) // bounded by maxInspectBytes
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("decompressed batch of %d bytes exceeds %d", len(out), limit)
	}
	return out, nil
}

// xerialBlockSize is snappy-java's default block size.
const xerialBlockSize = 32 << 10

var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
})

func (kafkaCodecs) Compress(codec int, dst, src []byte) ([]byte, error) {
	switch codec {
	case partition.CompressionGzip:
		buf := bytes.NewBuffer(dst)
		w := gzip.NewWriter(buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return buf.Bytes(), nil
	case partition.CompressionSnappy:
		// magic, version 1, compatible version 1, then [length][block]...
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		for len(src) > 0 {
			chunk := src[:min(len(src), xerialBlockSize)]
			src = src[len(chunk):]
			block := snappy.Encode(nil, chunk)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
			dst = append(dst, block...)
		}
		return dst, nil
	case partition.CompressionLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4.NewWriter(buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return buf.Bytes(), nil
	case partition.CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}
