package tier

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"
)

// CacheDir is the chunk cache's directory in the data dir (not a
// partition directory's name: no "-<n>" suffix).
const CacheDir = "remote-chunk-cache"

// Service is one node's tiered storage once started: the store, the
// uploader, the read side and the manifests of the partitions it hosts. A
// nil *Service is tiered storage off: every method answers as for a topic
// that is not tiered.
type Service struct {
	store    *S3
	bucket   string
	layout   Layout
	uploader *Uploader
	reader   *Reader
	cache    *Cache
	hosted   func() []Hosted
	log      logrus.FieldLogger
	m        Metrics
	// ctx bounds remote reads and background work: it ends when the
	// node stops.
	ctx context.Context

	// mu guards manifests and hostedOnce only, never held across I/O.
	mu        sync.Mutex
	manifests map[string]*Manifest // by partition dir, as last opened
	// hostedOnce are the dirs of manifests partitions() has seen among
	// the hosted partitions: only those are forgotten when no longer
	// hosted. A manifest is opened while its partition opens, before the
	// partition is hosted; forgetting it then lost it for good (the
	// partition stayed unread and unuploaded here until reopened).
	hostedOnce map[string]bool

	lastCache CacheStats // FlushMetrics's, on the node's one metrics loop
}

// New starts tiered storage for a node whose data dir is dataDir, or
// returns nil when s has no store. The store is not contacted here: a node
// whose store is down still starts, and uploads wait. hosted lists the
// partitions open on the node; ctx ends when the node stops.
func New(ctx context.Context, s Settings, dataDir string, hosted func() []Hosted, log logrus.FieldLogger, m Metrics) (*Service, error) {
	if !s.Store.Enabled() {
		return nil, nil
	}
	cr, err := LoadCredentials(s.Store, os.Getenv)
	if err != nil {
		return nil, err
	}
	store, err := NewS3(s.Store, cr)
	if err != nil {
		return nil, err
	}
	layout := Layout{Prefix: s.Store.Prefix}
	cache, err := NewCache(CacheConfig{Dir: filepath.Join(dataDir, CacheDir), MaxBytes: s.CacheBytes, ChunkBytes: s.ChunkBytes}, store)
	if err != nil {
		return nil, err
	}
	t := &Service{store: store, bucket: s.Store.Bucket, layout: layout, cache: cache, reader: NewReader(cache, layout), hosted: hosted,
		log: log, m: m, ctx: ctx, manifests: make(map[string]*Manifest), hostedOnce: make(map[string]bool)}
	t.uploader = NewUploader(s.Upload, store, layout, t.partitions, log, m)
	log.WithField("store", s.Store.String()).Info("tiered storage on")
	return t, nil
}

// RemoteLogDirPrefix starts the name of the store's entry in
// DescribeLogDirs (LogDir), which clients tell from a local directory by it.
const RemoteLogDirPrefix = "s3://"

// LogDir is the store as a log dir of DescribeLogDirs: s3://bucket/prefix,
// listing the node's tiered partitions with their remote bytes ("" when
// off).
func (t *Service) LogDir() string {
	if t == nil {
		return ""
	}
	return RemoteLogDirPrefix + t.bucket + "/" + t.layout.Prefix
}

// RunUploader uploads until ctx ends (the node's background loop).
func (t *Service) RunUploader(ctx context.Context) {
	if t == nil {
		return
	}
	t.uploader.Run(ctx)
}

// FlushMetrics hands the chunk cache's figures since the last call to the
// metrics (called on the node's metrics interval).
func (t *Service) FlushMetrics() {
	if t == nil || t.m == nil {
		return
	}
	st := t.cache.Stats()
	t.m.IncrCounter([]string{"tier", "cache", "hits"}, float32(st.Hits-t.lastCache.Hits))
	t.m.IncrCounter([]string{"tier", "cache", "misses"}, float32(st.Misses-t.lastCache.Misses))
	t.m.IncrCounter([]string{"tier", "download", "bytes"}, float32(st.DownloadBytes-t.lastCache.DownloadBytes))
	t.m.SetGauge([]string{"tier", "cache", "bytes"}, float32(st.Used))
	t.lastCache = st
}

// ReadyDetails are /readyz's lines on tiered storage: the upload backlog,
// and whether uploads are failing (none when off).
func (t *Service) ReadyDetails() []string {
	if t == nil {
		return nil
	}
	segs, bytes, failing := t.uploader.Total()
	if segs == 0 && failing == 0 {
		return []string{"remote storage: caught up"}
	}
	return []string{fmt.Sprintf("remote storage: %d segments (%d bytes) not yet uploaded, %d partitions failing uploads", segs, bytes, failing)}
}

// DeleteTopic removes a deleted topic's objects (run in the background:
// it lists and deletes, one request per object).
func (t *Service) DeleteTopic(ctx context.Context, topic string) {
	if t == nil {
		return
	}
	removed, err := DeleteTopic(ctx, t.store, t.layout, topic)
	l := t.log.WithField("topic", topic).WithField("objects", removed)
	if err != nil {
		l.WithError(err).Warn("remote storage: deleting the topic's objects failed; the orphan sweep will not find them, delete the prefix by hand")
		return
	}
	if removed > 0 {
		l.Info("remote storage: deleted topic's objects removed")
	}
}
