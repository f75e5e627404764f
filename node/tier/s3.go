package tier

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is an ObjectStore on an S3-compatible server (AWS S3, SeaweedFS,
// Ceph RGW, R2, GCS's XML API…), through minio-go's client.
type S3 struct {
	c      *minio.Client
	bucket string
	cfg    StoreConfig
}

// NewS3 is a client of the store cfg names, signing with cr. It does not
// touch the network.
func NewS3(cfg StoreConfig, cr Credentials) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("remote storage: no endpoint")
	}
	opts := &minio.Options{
		Creds:  credentials.NewStaticV4(cr.AccessKeyID, cr.SecretAccessKey, ""),
		Secure: cfg.TLS,
		Region: cfg.Region,
	}
	if cfg.PathStyle {
		opts.BucketLookup = minio.BucketLookupPath
	} else {
		opts.BucketLookup = minio.BucketLookupDNS
	}
	if cfg.TLS && cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("remote storage CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("remote storage CA file %s: no PEM certificate in it", cfg.CAFile)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		opts.Transport = tr
	}
	c, err := minio.New(cfg.Endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("remote storage client for %s: %w", cfg.Endpoint, err)
	}
	return &S3{c: c, bucket: cfg.Bucket, cfg: cfg}, nil
}

func (s *S3) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RequestTimeout)
}

// CreateBucket makes the bucket unless it exists (tests, first setups).
func (s *S3) CreateBucket(ctx context.Context) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	if err := s.c.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s.cfg.Region}); err != nil {
		return fmt.Errorf("make bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Put implements ObjectStore.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	// A single PUT for what fits (segments are at most 1 GiB by
	// segment.bytes' default; multipart above 128 MiB).
	_, err := s.c.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream", PartSize: 128 << 20,
	})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// cancelOnClose cancels a GetRange's context once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error { err := c.ReadCloser.Close(); c.cancel(); return err }

// GetRange implements ObjectStore.
func (s *S3) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	ctx, cancel := s.ctx(ctx)
	var opts minio.GetObjectOptions
	if off > 0 || length >= 0 {
		end := int64(0)
		if length >= 0 {
			end = off + length - 1
		}
		if err := opts.SetRange(off, end); err != nil {
			cancel()
			return nil, fmt.Errorf("get %s [%d,+%d): %w", key, off, length, err)
		}
	}
	obj, err := s.c.GetObject(ctx, s.bucket, key, opts)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	// GetObject is lazy: Stat makes the request, so a missing key fails here.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		cancel()
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return cancelOnClose{obj, cancel}, nil
}

// Delete implements ObjectStore.
func (s *S3) Delete(ctx context.Context, key string) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// maxList bounds one List's answer.
const maxList = 1 << 20

// List implements ObjectStore.
func (s *S3) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	var out []ObjectInfo
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list %s: %w", prefix, o.Err)
		}
		if len(out) >= maxList {
			return nil, fmt.Errorf("list %s: more than %d objects", prefix, maxList)
		}
		out = append(out, ObjectInfo{Key: o.Key, Size: o.Size})
	}
	return out, nil
}
