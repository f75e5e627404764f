package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/tier"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/partition"
)

// TierSettings are the node's tiered storage (node/tier): the object
// store tiered topics (remote.storage.enable) copy closed segments to,
// and how this node uploads and reads them back.
type TierSettings struct {
	// Store is the S3-compatible store; no endpoint turns tiered storage
	// off on this node (a tiered topic's replicas here then keep every
	// segment). Credentials come from Store.CredentialsFile or the
	// environment (tier.LoadCredentials).
	Store tier.StoreConfig
	// Upload tunes the uploader (interval, backoff on a failing store).
	Upload tier.UploaderConfig
	// CacheBytes bounds the on-disk chunk cache remote reads go through
	// (DATA/remote-chunk-cache); ChunkBytes is one ranged read.
	CacheBytes, ChunkBytes int64
}

// DefaultTierSettings is tiered storage off, with working defaults for
// the rest.
func DefaultTierSettings() TierSettings {
	return TierSettings{Store: tier.DefaultStoreConfig(), Upload: tier.DefaultUploaderConfig(), CacheBytes: 1 << 30, ChunkBytes: 4 << 20}
}

// remoteCacheDir is the chunk cache's directory in the data dir (not a
// partition directory's name: no "-<n>" suffix).
const remoteCacheDir = "remote-chunk-cache"

// remoteReadTimeout bounds a fetch's wait for the store.
const remoteReadTimeout = 30 * time.Second

// tierNode is the node's tiered storage once started: nil when off.
type tierNode struct {
	store    *tier.S3
	layout   tier.Layout
	uploader *tier.Uploader
	reader   *tier.Reader
	cache    *tier.Cache

	mu        sync.Mutex
	manifests map[string]*tier.Manifest // by partition dir, as last opened
}

func (s TierSettings) validate() error {
	if err := s.Store.Validate(); err != nil {
		return err
	}
	if s.Store.Enabled() && (s.ChunkBytes <= 0 || s.CacheBytes < s.ChunkBytes) {
		return fmt.Errorf("remote chunk cache %d bytes of %d-byte chunks: want 0 < chunk <= cache", s.CacheBytes, s.ChunkBytes)
	}
	if s.Store.Enabled() && (s.Upload.Interval <= 0 || s.Upload.MinBackoff <= 0 || s.Upload.MaxBackoff < s.Upload.MinBackoff) {
		return fmt.Errorf("remote upload interval %v, backoff %v..%v: want > 0 and min <= max", s.Upload.Interval, s.Upload.MinBackoff, s.Upload.MaxBackoff)
	}
	return nil
}

// startTier connects tiered storage, before any partition opens (each
// gets its manifest in openPartition). The store is not contacted here:
// a node whose store is down still starts, and uploads wait.
func (n *Node) startTier() error {
	cfg := n.cfg.Tier
	if !cfg.Store.Enabled() {
		return nil
	}
	cr, err := tier.LoadCredentials(cfg.Store, os.Getenv)
	if err != nil {
		return err
	}
	store, err := tier.NewS3(cfg.Store, cr)
	if err != nil {
		return err
	}
	layout := tier.Layout{Prefix: cfg.Store.Prefix}
	cache, err := tier.NewCache(tier.CacheConfig{Dir: filepath.Join(n.cfg.DataDir, remoteCacheDir), MaxBytes: cfg.CacheBytes, ChunkBytes: cfg.ChunkBytes}, store)
	if err != nil {
		return err
	}
	t := &tierNode{store: store, layout: layout, cache: cache, reader: tier.NewReader(cache, layout), manifests: make(map[string]*tier.Manifest)}
	t.uploader = tier.NewUploader(cfg.Upload, store, layout, n.tierPartitions, n.log.WithField("part", "tier"), n.metrics.Metrics)
	n.tier = t
	n.log.WithField("store", cfg.Store.String()).Info("tiered storage on")
	return nil
}

// startTierLoops runs the uploader and the cache metrics.
func (n *Node) startTierLoops() {
	if n.tier == nil {
		return
	}
	n.loops.Go(n.tier.uploader.Run)
	var last tier.CacheStats
	n.loops.Every(admin.FlushInterval, func() {
		st := n.tier.cache.Stats()
		n.metrics.IncrCounter([]string{"tier", "cache", "hits"}, float32(st.Hits-last.Hits))
		n.metrics.IncrCounter([]string{"tier", "cache", "misses"}, float32(st.Misses-last.Misses))
		n.metrics.IncrCounter([]string{"tier", "download", "bytes"}, float32(st.DownloadBytes-last.DownloadBytes))
		n.metrics.SetGauge([]string{"tier", "cache", "bytes"}, float32(st.Used))
		last = st
	})
}

// remoteLog opens the manifest of the partition in dir for its replica
// (replica.Config.Remote), or nil with tiered storage off.
func (n *Node) remoteLog(dir string, settings topicconfig.Settings) (replica.RemoteLog, error) {
	if n.tier == nil {
		return nil, nil
	}
	m, err := tier.OpenManifest(dir)
	if err != nil {
		return nil, err
	}
	m.SetTiered(settings.RemoteStorage)
	n.tier.mu.Lock()
	n.tier.manifests[dir] = m
	n.tier.mu.Unlock()
	return m, nil
}

// manifest is p's manifest, if tiered storage is on and p is tiered.
func (n *Node) manifest(p *localPartition) (*tier.Manifest, bool) {
	if n.tier == nil {
		return nil, false
	}
	n.tier.mu.Lock()
	m := n.tier.manifests[p.Dir]
	n.tier.mu.Unlock()
	if m == nil || !m.Tiered() {
		return nil, false
	}
	return m, true
}

// tierPartitions are the open partitions as the uploader sees them; each
// call refreshes whether each is tiered (an altered topic).
func (n *Node) tierPartitions() []*tier.Partition {
	parts := n.parts.All()
	out := make([]*tier.Partition, 0, len(parts))
	live := make(map[string]bool, len(parts))
	for _, p := range parts {
		live[p.Dir] = true
		n.tier.mu.Lock()
		m := n.tier.manifests[p.Dir]
		n.tier.mu.Unlock()
		if m == nil {
			continue
		}
		s := p.CurrentSettings()
		m.SetTiered(s.RemoteStorage)
		out = append(out, &tier.Partition{
			Topic: p.Topic, Index: p.Index, Source: p.Replica, Manifest: m,
			TxnIndexPath: filepath.Join(p.Dir, "txn-index"),
			Retention: func() (time.Duration, int64) {
				s := p.CurrentSettings()
				if !s.Delete {
					return -1, -1
				}
				return s.RetentionAge, s.RetentionBytes
			},
		})
	}
	n.tier.mu.Lock()
	for dir := range n.tier.manifests {
		if !live[dir] {
			delete(n.tier.manifests, dir)
		}
	}
	n.tier.mu.Unlock()
	return out
}

// logStart is the partition's first offset a consumer may read: the
// remote start for a tiered partition with remote segments.
func (n *Node) logStart(p *localPartition) int64 {
	start := p.Replica.LogStartOffset()
	if m, ok := n.manifest(p); ok && len(m.Segments()) > 0 {
		start = min(start, m.Start())
	}
	return start
}

// remoteGap says whether offset, below p's local log start, is one this
// replica cannot answer for yet: a snapshot moved its log past remote
// records it has not caught up on (tier.Manifest.Gap). The answer is
// OFFSET_NOT_AVAILABLE, which clients retry, never OFFSET_OUT_OF_RANGE,
// which makes them reset (and a consumer from the start lose the range).
func (n *Node) remoteGap(p *localPartition, offset int64) bool {
	m, ok := n.manifest(p)
	return ok && offset < p.Replica.LogStartOffset() && m.Gap(offset)
}

// remoteBehind says whether p's remote log start is not known here yet
// (tier.Manifest.Behind): ListOffsets answers OFFSET_NOT_AVAILABLE.
func (n *Node) remoteBehind(p *localPartition) bool {
	m, ok := n.manifest(p)
	return ok && m.Behind()
}

// remoteRead reads below the local log start from the store
// (partition.ErrOffsetOutOfRange when it does not have the offset).
func (n *Node) remoteRead(p *localPartition, offset int64, maxBytes int, upTo int64) (*partition.Slice, error) {
	m, ok := n.manifest(p)
	if !ok {
		return nil, partition.ErrOffsetOutOfRange
	}
	ctx, cancel := context.WithTimeout(n.loops.Context(), remoteReadTimeout)
	defer cancel()
	s, err := n.tier.reader.Read(ctx, p.Topic, p.Index, m, offset, maxBytes, upTo)
	if errors.Is(err, tier.ErrNotRemote) {
		return nil, partition.ErrOffsetOutOfRange
	}
	return s, err
}

// remoteOffsetForTime is ListOffsets by timestamp over the remote
// segments below the local log start: ok when a remote batch is that new.
func (n *Node) remoteOffsetForTime(p *localPartition, ts int64) (offset, timestamp int64, ok bool, err error) {
	m, tiered := n.manifest(p)
	if !tiered || m.Start() >= p.Replica.LogStartOffset() {
		return 0, 0, false, nil
	}
	ctx, cancel := context.WithTimeout(n.loops.Context(), remoteReadTimeout)
	defer cancel()
	off, t, ok, err := n.tier.reader.OffsetForTime(ctx, p.Topic, p.Index, m, ts)
	if ok && off >= p.Replica.LogStartOffset() {
		ok = false // the local log answers it
	}
	return off, t, ok, err
}

// remoteEnd is the offset after the last uploaded record, if any.
func (n *Node) remoteEnd(p *localPartition) (int64, bool) {
	m, ok := n.manifest(p)
	if !ok || len(m.Segments()) == 0 {
		return 0, false
	}
	return m.End(), true
}

// tierReadiness is /readyz's detail on tiered storage: the upload
// backlog, and whether uploads are failing.
func (n *Node) tierReadiness() string {
	if n.tier == nil {
		return ""
	}
	segs, bytes, failing := n.tier.uploader.Total()
	if segs == 0 && failing == 0 {
		return "remote storage: caught up"
	}
	return fmt.Sprintf("remote storage: %d segments (%d bytes) not yet uploaded, %d partitions failing uploads", segs, bytes, failing)
}

// deleteRemoteTopic removes a deleted topic's objects, in the background.
func (n *Node) deleteRemoteTopic(topic string) {
	if n.tier == nil {
		return
	}
	n.loops.Go(func(ctx context.Context) {
		removed, err := tier.DeleteTopic(ctx, n.tier.store, n.tier.layout, topic)
		l := n.log.WithField("topic", topic).WithField("objects", removed)
		if err != nil {
			l.WithError(err).Warn("remote storage: deleting the topic's objects failed; the orphan sweep will not find them, delete the prefix by hand")
			return
		}
		if removed > 0 {
			l.Info("remote storage: deleted topic's objects removed")
		}
	})
}
