package tier

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// Metrics is where the uploader counts (go-metrics' *metrics.Metrics).
type Metrics interface {
	IncrCounter(key []string, val float32)
	AddSample(key []string, val float32)
	SetGauge(key []string, val float32)
}

// UploaderConfig tunes the uploader.
type UploaderConfig struct {
	// Interval is how often every tiered partition this node leads is
	// looked at for closed segments to upload.
	Interval time.Duration
	// MinBackoff and MaxBackoff bound the wait before a partition whose
	// upload failed (the store unreachable or slow) is tried again; the
	// wait doubles with each failure in a row.
	MinBackoff, MaxBackoff time.Duration
	// RecordTimeout bounds the wait for an upload's record to be
	// committed and applied.
	RecordTimeout time.Duration
	// MaxSideFile bounds each small file uploaded beside a segment (the
	// leader-epoch checkpoint, producer snapshot, transaction index).
	MaxSideFile int64
	// SweepEvery: every SweepEvery-th pass also removes each led
	// partition's unreferenced objects (SweepOrphans), a listing each.
	SweepEvery int
}

// DefaultUploaderConfig is the uploader's defaults.
func DefaultUploaderConfig() UploaderConfig {
	return UploaderConfig{Interval: time.Second, MinBackoff: time.Second, MaxBackoff: 30 * time.Second,
		RecordTimeout: 30 * time.Second, MaxSideFile: 64 << 20, SweepEvery: 60}
}

// Backlog is what a partition has not uploaded yet.
type Backlog struct {
	Segments int
	Bytes    int64
	// LastError is the last failed attempt's error ("" after a success).
	LastError string
	// Failures is how many attempts in a row failed.
	Failures int
}

// Uploader copies the closed, committed segments of the tiered partitions
// this node leads to the store, then records each upload (doc.go).
type Uploader struct {
	cfg    UploaderConfig
	store  ObjectStore
	layout Layout
	parts  func() []*Partition
	log    logrus.FieldLogger
	m      Metrics

	passes int // Pass's count; Pass runs on one goroutine

	mu      sync.Mutex
	backlog map[partKey]*partState
}

type partKey struct {
	topic string
	index int32
}

type partState struct {
	Backlog
	retryAt time.Time
	// producers is the producer snapshot uploaded with the last segment
	// this uploader recorded, as of producersEnd (the next snapshot is
	// built on it); only the uploader's goroutine touches them.
	producers    []byte
	producersEnd int64
	// seededEnd is the end of the producer snapshot last handed to the
	// partition (Partition.SeedProducers).
	seededEnd int64
}

// NewUploader is an uploader of parts' partitions (called each pass) to store.
func NewUploader(cfg UploaderConfig, store ObjectStore, layout Layout, parts func() []*Partition, log logrus.FieldLogger, m Metrics) *Uploader {
	return &Uploader{cfg: cfg, store: store, layout: layout, parts: parts, log: log, m: m, backlog: make(map[partKey]*partState)}
}

// Run uploads until ctx ends.
func (u *Uploader) Run(ctx context.Context) {
	t := time.NewTicker(u.cfg.Interval)
	defer t.Stop()
	for {
		u.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass looks at every tiered partition this node leads once, uploading
// what is due (a partition in backoff waits), and refreshes the backlog.
func (u *Uploader) Pass(ctx context.Context) {
	u.passes++
	seen := make(map[partKey]bool)
	var segs int
	var bytes int64
	for _, p := range u.parts() {
		if ctx.Err() != nil {
			return
		}
		if !p.Manifest.Tiered() {
			u.log.WithField("topic", p.Topic).WithField("partition", p.Index).Trace("not tiered")
			continue
		}
		k := partKey{p.Topic, p.Index}
		seen[k] = true
		st := u.state(k)
		if p.Manifest.NeedsMerge(p.Source.LogStartOffset()) {
			// Leader or follower: a replica a snapshot moved past
			// remote records catches up from the store's copy, and
			// uploads nothing until it has.
			if err := u.catchUp(ctx, p); err != nil && ctx.Err() == nil {
				u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).
					Warn("remote manifest: catching up from the store's copy failed; retrying next pass")
			}
		}
		if p.SeedProducers != nil && !p.Manifest.NeedsMerge(p.Source.LogStartOffset()) {
			u.seedProducers(ctx, p, st)
		}
		if p.Source.IsLeader() && !time.Now().Before(st.retryAt) && !p.Manifest.NeedsMerge(p.Source.LogStartOffset()) {
			err := u.uploadPartition(ctx, p, st)
			if err == nil {
				_, err = u.remoteRetention(ctx, p, time.Now())
			}
			if err == nil && u.cfg.SweepEvery > 0 && u.passes%u.cfg.SweepEvery == 0 {
				_, err = u.SweepOrphans(ctx, p)
			}
			u.mu.Lock()
			if err != nil && ctx.Err() == nil {
				st.Failures++
				st.LastError = err.Error()
				wait := min(u.cfg.MinBackoff<<min(st.Failures-1, 20), u.cfg.MaxBackoff)
				st.retryAt = time.Now().Add(wait)
				u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).
					WithField("retry_in", wait).Warn("remote storage upload failed")
				u.count([]string{"tier", "upload", "failures"}, 1)
			} else if err == nil {
				st.Failures, st.LastError = 0, ""
			}
			u.mu.Unlock()
		}
		// The backlog is the leader's: a follower's segment boundaries
		// may differ, and it uploads nothing.
		n, b := 0, int64(0)
		leader := p.Source.IsLeader()
		if leader {
			n, b = pending(p)
		}
		u.mu.Lock()
		st.Segments, st.Bytes = n, b
		if !leader {
			st.Failures, st.LastError = 0, ""
		}
		u.mu.Unlock()
		segs += n
		bytes += b
	}
	u.mu.Lock()
	for k := range u.backlog {
		if !seen[k] {
			delete(u.backlog, k)
		}
	}
	u.mu.Unlock()
	if u.m != nil {
		u.m.SetGauge([]string{"tier", "backlog", "segments"}, float32(segs))
		u.m.SetGauge([]string{"tier", "backlog", "bytes"}, float32(bytes))
	}
}

func (u *Uploader) state(k partKey) *partState {
	u.mu.Lock()
	defer u.mu.Unlock()
	st := u.backlog[k]
	if st == nil {
		st = &partState{}
		u.backlog[k] = st
	}
	return st
}

// pending is what p holds locally that is not uploaded: its closed
// segments above the manifest's end.
func pending(p *Partition) (int, int64) {
	end := p.Manifest.End()
	var n int
	var b int64
	for _, s := range p.Source.ClosedSegments() {
		if s.Next > end {
			n++
			b += s.Size
		}
	}
	return n, b
}

// Backlog is partition (topic, index)'s backlog as of the last pass, less
// what the pass under way has uploaded since.
func (u *Uploader) Backlog(topic string, index int32) (Backlog, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	st, ok := u.backlog[partKey{topic, index}]
	if !ok {
		return Backlog{}, false
	}
	return st.Backlog, true
}

// Total is the backlog of every tiered partition, and how many are failing.
func (u *Uploader) Total() (segments int, bytes int64, failing int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, st := range u.backlog {
		segments += st.Segments
		bytes += st.Bytes
		if st.Failures > 0 {
			failing++
		}
	}
	return
}

func (u *Uploader) count(key []string, v float32) {
	if u.m != nil {
		u.m.IncrCounter(key, v)
	}
}

// errNotContinued: the record was committed but did not extend the
// manifest (another leader's record of the range came first).
var errNotContinued = errors.New("upload record did not extend the manifest")

// uploadPartition uploads p's closed segments that are wholly committed,
// below the last stable offset (their txnindex complete) and above the
// manifest's end, oldest first, each recorded before the next.
func (u *Uploader) uploadPartition(ctx context.Context, p *Partition, st *partState) error {
	for _, s := range p.Source.ClosedSegments() {
		end := p.Manifest.End()
		if s.Next <= end {
			continue
		}
		if hw := p.Source.HighWatermark(); s.Next > hw || !p.Source.IsLeader() {
			u.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("next", s.Next).
				WithField("hw", hw).Debug("segment not uploaded yet: not wholly committed, or not leading")
			return nil
		}
		var aborted []AbortedTxn
		if p.Aborted != nil {
			txns, stable, err := p.Aborted(s.Base, s.Next)
			if err != nil {
				return err
			}
			if !stable {
				u.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("next", s.Next).
					Debug("segment not uploaded yet: a transaction with records in it is open (the last stable offset is below its end)")
				return nil
			}
			aborted = txns
		}
		if s.Base > end && (end > 0 || len(p.Manifest.Segments()) > 0) {
			// A gap: the local log starts above the manifest's end (a
			// replica that took a snapshot). Recorded uploads must be
			// contiguous, so this replica cannot continue them.
			return fmt.Errorf("local segment %d starts above the remote end %d", s.Base, end)
		}
		if err := u.uploadSegment(ctx, p, s, aborted, st); err != nil {
			return err
		}
		// A pass catching up on a long backlog takes minutes: the
		// backlog it reports (/readyz, Backlog) shrinks as it goes,
		// and an upload that went through means it is not failing.
		u.mu.Lock()
		st.Segments, st.Bytes = max(st.Segments-1, 0), max(st.Bytes-s.Size, 0)
		st.Failures, st.LastError = 0, ""
		u.mu.Unlock()
	}
	return nil
}

func (u *Uploader) uploadSegment(ctx context.Context, p *Partition, s partition.SegmentInfo, aborted []AbortedTxn, st *partState) error {
	prefix, err := u.layout.PartitionPrefix(p.Topic, p.Index)
	if err != nil {
		return err
	}
	rs := RemoteSegment{Base: s.Base, Next: s.Next, Size: s.Size, MaxTimestamp: s.MaxTimestamp, Epoch: p.Source.LeaderEpoch(),
		Epochs: SegmentEpochs(p.Source.LeaderEpochs(), s.Base, s.Next)}
	if _, err := rand.Read(rs.ID[:]); err != nil {
		return err
	}
	dir := prefix + SegmentDir(s.Base, s.Next, rs.ID)
	start := time.Now()
	// The log first, from the file as it is now: an open file stays
	// readable if retention or a cleaning removes it meanwhile.
	f, err := os.Open(s.LogPath)
	if err != nil {
		return fmt.Errorf("open segment %d: %w", s.Base, err)
	}
	defer f.Close()
	if err := u.store.Put(ctx, dir+FileKinds[fileLog], io.NewSectionReader(f, 0, s.Size), s.Size); err != nil {
		return err
	}
	rs.FileSizes[fileLog] = s.Size
	var producers []byte // the snapshot uploaded, once recorded the next one's base
	side := [numFiles]func() ([]byte, error){
		fileIndex:     func() ([]byte, error) { return u.readSide(s.IndexPath) },
		fileTimeIndex: func() ([]byte, error) { return u.readSide(s.TimeIndexPath) },
		fileEpochs:    func() ([]byte, error) { return u.readSide(p.Source.LeaderEpochCheckpointPath()) },
		fileTxnIndex:  func() ([]byte, error) { return EncodeTxnIndex(aborted), nil },
		fileProducers: func() ([]byte, error) {
			if p.ProducerSnapshot == nil {
				return nil, nil
			}
			b, err := p.ProducerSnapshot(u.previousProducers(ctx, p, st, s.Base), s.Next)
			producers = b
			return b, err
		},
	}
	total := s.Size
	for kind, read := range side {
		if read == nil {
			continue
		}
		b, err := read()
		if err != nil {
			return err
		}
		if len(b) == 0 {
			continue
		}
		if err := u.store.Put(ctx, dir+FileKinds[kind], bytes.NewReader(b), int64(len(b))); err != nil {
			return err
		}
		rs.FileSizes[kind] = int64(len(b))
		total += int64(len(b))
	}
	u.count([]string{"tier", "upload", "bytes"}, float32(total))
	if u.m != nil {
		u.m.AddSample([]string{"tier", "upload", "seconds"}, float32(time.Since(start).Seconds()))
	}
	rctx, cancel := context.WithTimeout(ctx, u.cfg.RecordTimeout)
	defer cancel()
	if err := p.Source.RecordRemote(rctx, EncodeUpload(rs)); err != nil {
		return fmt.Errorf("record upload of segment %d: %w", s.Base, err)
	}
	if p.Manifest.End() < s.Next {
		return fmt.Errorf("segment %d: %w", s.Base, errNotContinued)
	}
	st.producers, st.producersEnd = producers, s.Next
	u.count([]string{"tier", "upload", "segments"}, 1)
	u.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("base", s.Base).
		WithField("next", s.Next).WithField("bytes", total).Debug("segment uploaded")
	u.putManifest(ctx, p)
	return nil
}

// previousProducers is the producer snapshot as of base to build the next
// one on: the one this uploader recorded last, or the store's beside the
// recorded segment ending at base (a new leader's first upload), or nil
// (the next is built from the local log alone).
func (u *Uploader) previousProducers(ctx context.Context, p *Partition, st *partState, base int64) []byte {
	if st.producers != nil && st.producersEnd == base {
		return st.producers
	}
	prev, ok := p.Manifest.Find(base - 1)
	if !ok || prev.Next != base || prev.FileSizes[fileProducers] == 0 || prev.FileSizes[fileProducers] > maxProducerSnapshot {
		return nil
	}
	b, err := getObject(ctx, u.store, u.layout, p.Topic, p.Index, prev, fileProducers)
	if err != nil {
		u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).WithField("base", prev.Base).
			Warn("remote storage: the previous segment's producer snapshot could not be read; the next is built from the local log alone")
		return nil
	}
	return b
}

// seedProducers hands the partition the producer snapshot of its last
// recorded segment once per segment (this uploader's own, else the
// store's), so that a rebuild of its producer state — as a new leader,
// after a restart — knows the producers whose batches local retention has
// deleted. A failed read is tried again next pass.
func (u *Uploader) seedProducers(ctx context.Context, p *Partition, st *partState) {
	end := p.Manifest.End()
	if end == 0 || end == st.seededEnd {
		return
	}
	b := st.producers
	if b == nil || st.producersEnd != end {
		last, ok := p.Manifest.Find(end - 1)
		if !ok || last.FileSizes[fileProducers] == 0 || last.FileSizes[fileProducers] > maxProducerSnapshot {
			st.seededEnd = end // none uploaded with it
			return
		}
		var err error
		if b, err = getObject(ctx, u.store, u.layout, p.Topic, p.Index, last, fileProducers); err != nil {
			u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).
				Debug("remote storage: reading the last segment's producer snapshot failed; retrying next pass")
			return
		}
	}
	if err := p.SeedProducers(b); err != nil {
		u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).
			Warn("remote storage: keeping the last segment's producer snapshot failed; retrying next pass")
		return
	}
	st.seededEnd = end
}

// maxProducerSnapshot bounds a producer snapshot read back from the store.
const maxProducerSnapshot = 64 << 20

// getObject reads remote segment s's object of kind whole (at most its
// recorded size).
func getObject(ctx context.Context, store ObjectStore, layout Layout, topic string, index int32, s RemoteSegment, kind int) ([]byte, error) {
	prefix, err := layout.PartitionPrefix(topic, index)
	if err != nil {
		return nil, err
	}
	rc, err := store.GetRange(ctx, prefix+SegmentDir(s.Base, s.Next, s.ID)+FileKinds[kind], 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, s.FileSizes[kind]+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != s.FileSizes[kind] {
		return nil, fmt.Errorf("remote segment %d of %s-%d: %s of %d bytes, recorded %d", s.Base, topic, index, FileKinds[kind], len(b), s.FileSizes[kind])
	}
	return b, nil
}

// ManifestKey is the key of the store's copy of a partition's manifest.
func (l Layout) ManifestKey(topic string, index int32) (string, error) {
	prefix, err := l.PartitionPrefix(topic, index)
	return prefix + "manifest", err
}

// putManifest writes the store's copy of the manifest, for a restore and
// for replicas that missed records (a snapshot); best effort, rewritten
// after each record.
func (u *Uploader) putManifest(ctx context.Context, p *Partition) {
	key, err := u.layout.ManifestKey(p.Topic, p.Index)
	if err != nil {
		return
	}
	m := EncodeManifest(p.Manifest.Start(), p.Manifest.Segments())
	if err := u.store.Put(ctx, key, bytes.NewReader(m), int64(len(m))); err != nil {
		u.log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Index).Warn("remote manifest copy")
	}
}

// maxManifestCopy bounds the store's manifest copy read back: the most
// segments, four leader epochs each on average.
const maxManifestCopy = 17 + maxManifestSegments*(uploadRecordSize+2+4*epochEntrySize) + 4

// catchUp merges the store's copy of p's manifest into p's (Manifest.Merge):
// what a replica that a Raft snapshot moved past remote records needs.
// The copy is read with no lock held.
func (u *Uploader) catchUp(ctx context.Context, p *Partition) error {
	start, segs, found, err := readManifestCopy(ctx, u.store, u.layout, p.Topic, p.Index)
	if err != nil {
		return err
	}
	caught, err := p.Manifest.Merge(start, segs, found)
	if err != nil {
		return err
	}
	u.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("remote_end", p.Manifest.End()).
		WithField("caught_up", caught).Info("remote manifest merged from the store's copy")
	return nil
}

// readManifestCopy reads and decodes the store's copy of a partition's
// manifest (putManifest); found is false when the store has none (nothing
// was uploaded).
func readManifestCopy(ctx context.Context, store ObjectStore, layout Layout, topic string, index int32) (start int64, segs []RemoteSegment, found bool, err error) {
	key, err := layout.ManifestKey(topic, index)
	if err != nil {
		return 0, nil, false, err
	}
	rc, err := store.GetRange(ctx, key, 0, -1)
	if errors.Is(err, ErrNotFound) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	b, err := io.ReadAll(io.LimitReader(rc, int64(maxManifestCopy)+1))
	rc.Close()
	if err != nil {
		return 0, nil, false, err
	}
	if len(b) > maxManifestCopy {
		return 0, nil, false, fmt.Errorf("store's manifest copy %s: larger than %d bytes", key, maxManifestCopy)
	}
	if start, segs, err = DecodeManifest(b); err != nil {
		return 0, nil, false, fmt.Errorf("store's manifest copy %s: %w", key, err)
	}
	return start, segs, true, nil
}

// readSide reads a small file uploaded beside a segment; a missing one is
// empty (not every partition has a transaction index).
func (u *Uploader) readSide(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, u.cfg.MaxSideFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > u.cfg.MaxSideFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, u.cfg.MaxSideFile)
	}
	return b, nil
}
