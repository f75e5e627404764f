package tier

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
)

// StoreConfig is where the object store is and how to reach it. The
// credentials are not part of it: they come from CredentialsFile or the
// environment (LoadCredentials), never from a flag value, and are never
// logged (String leaves them out).
type StoreConfig struct {
	// Endpoint is the store's host:port (no scheme); empty turns tiered
	// storage off on this node.
	Endpoint string
	// Bucket holds every object; it must exist (CreateBucket makes one
	// for tests and first setups).
	Bucket string
	// Region is the bucket's region (signing); "us-east-1" by default.
	Region string
	// PathStyle addresses the bucket in the path (host/bucket/key), as most
	// S3-compatible stores want; false uses virtual-host style, as AWS
	// prefers.
	PathStyle bool
	// Prefix is put before every key (e.g. "cluster-a/"), so that clusters
	// may share a bucket.
	Prefix string
	// CredentialsFile holds the access key id and secret, as lines
	// access_key_id=… and secret_access_key=…; empty reads
	// SPOOL_S3_ACCESS_KEY_ID and SPOOL_S3_SECRET_ACCESS_KEY (or AWS_ACCESS_KEY_ID
	// and AWS_SECRET_ACCESS_KEY) from the environment.
	CredentialsFile string
	// TLS uses https; CAFile, when set, is the PEM bundle the store's
	// certificate is checked against (else the system's).
	TLS    bool
	CAFile string
	// RequestTimeout bounds each store request.
	RequestTimeout time.Duration
}

// DefaultStoreConfig is a store config with no endpoint (tiered storage
// off) and working defaults for the rest.
func DefaultStoreConfig() StoreConfig {
	return StoreConfig{Region: "us-east-1", PathStyle: true, RequestTimeout: 30 * time.Second}
}

// Enabled says whether an endpoint is configured.
func (c StoreConfig) Enabled() bool { return c.Endpoint != "" }

// Validate checks the config without touching the network.
func (c StoreConfig) Validate() error {
	if !c.Enabled() {
		return nil
	}
	if strings.Contains(c.Endpoint, "://") || strings.ContainsAny(c.Endpoint, "/ ") {
		return fmt.Errorf("remote storage endpoint %q: want host:port, no scheme or path", c.Endpoint)
	}
	if !validBucket(c.Bucket) {
		return fmt.Errorf("remote storage bucket %q: want 3-63 characters of a-z, 0-9, '.' and '-'", c.Bucket)
	}
	if len(c.Prefix) > 256 || strings.Contains(c.Prefix, "..") || strings.HasPrefix(c.Prefix, "/") {
		return fmt.Errorf("remote storage prefix %q: at most 256 characters, no '..', not starting with '/'", c.Prefix)
	}
	if c.RequestTimeout <= 0 {
		return fmt.Errorf("remote storage request timeout %s: want more than 0", c.RequestTimeout)
	}
	return nil
}

// String describes the config for logs and debug pages: no credentials.
func (c StoreConfig) String() string {
	if !c.Enabled() {
		return "off"
	}
	scheme := "http"
	if c.TLS {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s bucket=%s region=%s path-style=%t prefix=%q", scheme, c.Endpoint, c.Bucket, c.Region, c.PathStyle, c.Prefix)
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// Credentials are the store's access key id and secret.
type Credentials struct {
	AccessKeyID, SecretAccessKey string
}

// String never shows the secret.
func (Credentials) String() string { return "Credentials{redacted}" }

// GoString never shows the secret either (%#v).
func (c Credentials) GoString() string { return c.String() }

// maxCredentialsFile bounds the credentials file read.
const maxCredentialsFile = 64 << 10

// LoadCredentials reads the credentials from c.CredentialsFile, or from
// the environment (getenv) when it is empty. Errors name the file or
// variable, never a value.
func LoadCredentials(c StoreConfig, getenv func(string) string) (Credentials, error) {
	if c.CredentialsFile == "" {
		id := getenv("SPOOL_S3_ACCESS_KEY_ID")
		secret := getenv("SPOOL_S3_SECRET_ACCESS_KEY")
		if id == "" && secret == "" {
			id, secret = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		}
		if id == "" || secret == "" {
			return Credentials{}, fmt.Errorf("remote storage credentials: set SPOOL_S3_ACCESS_KEY_ID and SPOOL_S3_SECRET_ACCESS_KEY, or a credentials file")
		}
		return Credentials{AccessKeyID: id, SecretAccessKey: secret}, nil
	}
	f, err := os.Open(c.CredentialsFile)
	if err != nil {
		return Credentials{}, fmt.Errorf("remote storage credentials file: %w", err)
	}
	defer f.Close()
	b := make([]byte, maxCredentialsFile+1)
	n, _ := f.Read(b)
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			break
		}
	}
	if n > maxCredentialsFile {
		return Credentials{}, fmt.Errorf("remote storage credentials file %s: larger than %d bytes", c.CredentialsFile, maxCredentialsFile)
	}
	var cr Credentials
	sc := bufio.NewScanner(bytes.NewReader(b[:n]))
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok {
			return Credentials{}, fmt.Errorf("remote storage credentials file %s line %d: want key=value", c.CredentialsFile, line)
		}
		switch strings.TrimSpace(k) {
		case "access_key_id", "aws_access_key_id":
			cr.AccessKeyID = strings.TrimSpace(v)
		case "secret_access_key", "aws_secret_access_key":
			cr.SecretAccessKey = strings.TrimSpace(v)
		default:
			return Credentials{}, fmt.Errorf("remote storage credentials file %s line %d: unknown key %q", c.CredentialsFile, line, strings.TrimSpace(k))
		}
	}
	if cr.AccessKeyID == "" || cr.SecretAccessKey == "" {
		return Credentials{}, fmt.Errorf("remote storage credentials file %s: want access_key_id and secret_access_key", c.CredentialsFile)
	}
	return cr, nil
}
