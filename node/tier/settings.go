package tier

import "fmt"

// Settings are a node's tiered storage: the object store tiered topics
// (remote.storage.enable) copy closed segments to, and how the node
// uploads and reads them back (node.Config.Tier).
type Settings struct {
	// Store is the S3-compatible store; no endpoint turns tiered storage
	// off on this node (a tiered topic's replicas here then keep every
	// segment). Credentials come from Store.CredentialsFile or the
	// environment (LoadCredentials).
	Store StoreConfig
	// Upload tunes the uploader (interval, backoff on a failing store).
	Upload UploaderConfig
	// CacheBytes bounds the on-disk chunk cache remote reads go through
	// (DATA/remote-chunk-cache); ChunkBytes is one ranged read.
	CacheBytes, ChunkBytes int64
}

// DefaultSettings is tiered storage off, with working defaults for the
// rest.
func DefaultSettings() Settings {
	return Settings{Store: DefaultStoreConfig(), Upload: DefaultUploaderConfig(), CacheBytes: 1 << 30, ChunkBytes: 4 << 20}
}

// Validate checks the settings; with no endpoint only the store's.
func (s Settings) Validate() error {
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
