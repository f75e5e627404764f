package main

import (
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/node"
)

// addTierFlags adds tiered storage (node/tier): where the S3-compatible
// store is, and how uploads and remote reads run. The credentials are
// never a flag: --remote-storage-credentials-file, or the environment
// (SPOOL_S3_ACCESS_KEY_ID, SPOOL_S3_SECRET_ACCESS_KEY; or AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY).
func addTierFlags(fs *pflag.FlagSet, cfg *node.Config) {
	t := &cfg.Tier
	fs.StringVar(&t.Store.Endpoint, "remote-storage-endpoint", t.Store.Endpoint, "host:port of the S3-compatible object store tiered topics (remote.storage.enable=true) copy closed segments to; empty turns tiered storage off (SPOOL_REMOTE_STORAGE_ENDPOINT)")
	fs.StringVar(&t.Store.Bucket, "remote-storage-bucket", t.Store.Bucket, "bucket of the object store; it must exist (SPOOL_REMOTE_STORAGE_BUCKET)")
	fs.StringVar(&t.Store.Region, "remote-storage-region", t.Store.Region, "region of the bucket, for request signing (SPOOL_REMOTE_STORAGE_REGION)")
	fs.BoolVar(&t.Store.PathStyle, "remote-storage-path-style", t.Store.PathStyle, "address the bucket in the path (host/bucket/key), as most S3-compatible stores want; false uses virtual-host style, as AWS prefers (SPOOL_REMOTE_STORAGE_PATH_STYLE)")
	fs.StringVar(&t.Store.Prefix, "remote-storage-prefix", t.Store.Prefix, "prefix of every object key, so clusters may share a bucket (SPOOL_REMOTE_STORAGE_PREFIX)")
	fs.StringVar(&t.Store.CredentialsFile, "remote-storage-credentials-file", t.Store.CredentialsFile, "file with access_key_id=… and secret_access_key=… lines; empty reads SPOOL_S3_ACCESS_KEY_ID and SPOOL_S3_SECRET_ACCESS_KEY from the environment (SPOOL_REMOTE_STORAGE_CREDENTIALS_FILE)")
	fs.BoolVar(&t.Store.TLS, "remote-storage-tls", t.Store.TLS, "reach the store over https (SPOOL_REMOTE_STORAGE_TLS)")
	fs.StringVar(&t.Store.CAFile, "remote-storage-ca-file", t.Store.CAFile, "PEM bundle the store's certificate is checked against with --remote-storage-tls; empty uses the system's (SPOOL_REMOTE_STORAGE_CA_FILE)")
	fs.DurationVar(&t.Store.RequestTimeout, "remote-storage-request-timeout", t.Store.RequestTimeout, "bound on each request to the store (SPOOL_REMOTE_STORAGE_REQUEST_TIMEOUT)")
	fs.DurationVar(&t.Upload.Interval, "remote-storage-upload-interval", t.Upload.Interval, "how often the tiered partitions this node leads are looked at for closed segments to upload (SPOOL_REMOTE_STORAGE_UPLOAD_INTERVAL)")
	fs.DurationVar(&t.Upload.MaxBackoff, "remote-storage-max-backoff", t.Upload.MaxBackoff, "longest wait before a failed upload is tried again; the wait doubles with each failure in a row, from one second (SPOOL_REMOTE_STORAGE_MAX_BACKOFF)")
	fs.Int64Var(&t.CacheBytes, "remote-storage-cache-bytes", t.CacheBytes, "bound of the on-disk chunk cache (DATA/remote-chunk-cache) reads from the store go through (SPOOL_REMOTE_STORAGE_CACHE_BYTES)")
	fs.Int64Var(&t.ChunkBytes, "remote-storage-chunk-bytes", t.ChunkBytes, "size of one ranged read from the store into the chunk cache (SPOOL_REMOTE_STORAGE_CHUNK_BYTES)")
}
