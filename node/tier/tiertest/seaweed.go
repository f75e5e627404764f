// Package tiertest starts a real S3-compatible server for tests: a
// SeaweedFS `weed mini` process on loopback, on free ports, with its own
// data directory and credentials. The binary is SPOOL_WEED_BIN, else
// ${XDG_CACHE_HOME:-~/.cache}/spool/weed-<WeedVersion> (scripts/test builds
// it from the Go module proxy); a test that needs it fails without it.
package tiertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/testports"
	"github.com/spool-log/spool/node/tier"
)

// WeedVersion is the SeaweedFS module version scripts/test builds.
const WeedVersion = "v0.0.0-20261109003541-7506e5f91cd6"

// Credentials the server accepts (test only).
const (
	AccessKey = "AKIDSPOOLTEST"
	SecretKey = "spool-test-secret-key"
	Bucket    = "spool-test"
)

// WeedBinary is the path of the weed binary, or an error saying how to get one.
func WeedBinary() (string, error) {
	if p := os.Getenv("SPOOL_WEED_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("SPOOL_WEED_BIN: %w", err)
		}
		return p, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "spool", "weed-"+WeedVersion)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no SeaweedFS binary at %s and SPOOL_WEED_BIN unset: scripts/test builds it (go mod download github.com/seaweedfs/seaweedfs@%s, then go build ./weed)", p, WeedVersion)
	}
	return p, nil
}

// Seaweed is a running (or stopped) weed mini.
type Seaweed struct {
	Endpoint string // host:port of its S3 API
	bin, dir string
	args     []string

	mu  sync.Mutex
	cmd *exec.Cmd
	log *os.File
}

// Start starts a weed mini in a temporary directory and waits until its S3
// API answers, with the test's bucket made. It is stopped at the test's end.
func Start(t testing.TB) *Seaweed {
	t.Helper()
	bin, err := WeedBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "s3.json")
	ident := fmt.Sprintf(`{"identities":[{"name":"spool","credentials":[{"accessKey":%q,"secretKey":%q}],"actions":["Admin","Read","Write","List","Tagging"]}]}`, AccessKey, SecretKey)
	if err := os.WriteFile(conf, []byte(ident), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := freePorts(t, 16)
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s := &Seaweed{Endpoint: "127.0.0.1:" + p(0), bin: bin, dir: dir}
	s.args = []string{"mini", "-dir=" + filepath.Join(dir, "data"), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3.config=" + conf, "-admin.ui=false", "-webdav=false", "-admin.port.legacy=0",
		"-s3.port=" + p(0), "-s3.port.grpc=" + p(1), "-s3.port.iceberg=" + p(2), "-s3.port.lance=" + p(3),
		"-master.port=" + p(4), "-master.port.grpc=" + p(5), "-volume.port=" + p(6), "-volume.port.grpc=" + p(7),
		"-filer.port=" + p(8), "-filer.port.grpc=" + p(9), "-admin.port=" + p(10), "-admin.port.grpc=" + p(11),
		"-metricsPort=" + p(12), "-s3.metricsPort=" + p(13), "-debug.port=" + p(14), "-s3.debug.port=" + p(15),
		"-master.volumeSizeLimitMB=64",
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	s.Restart(t)
	store := s.Store(t, "")
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := store.CreateBucket(ctx)
		cancel()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("SeaweedFS at %s not ready: %v (log %s)", s.Endpoint, err, filepath.Join(dir, "weed.log"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Config is a store config pointing at the server, with prefix.
func (s *Seaweed) Config(prefix string) tier.StoreConfig {
	c := tier.DefaultStoreConfig()
	c.Endpoint, c.Bucket, c.Prefix = s.Endpoint, Bucket, prefix
	c.RequestTimeout = 10 * time.Second
	return c
}

// Creds are the server's credentials.
func Creds() tier.Credentials {
	return tier.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey}
}

// Store is an S3 client of the server.
func (s *Seaweed) Store(t testing.TB, prefix string) *tier.S3 {
	t.Helper()
	st, err := tier.NewS3(s.Config(prefix), Creds())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Stop kills the server (SIGKILL: an outage, not a shutdown); its data stays.
func (s *Seaweed) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
	s.log.Close()
}

// Restart starts the server again on the same ports and data.
func (s *Seaweed) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	lf, err := os.OpenFile(filepath.Join(s.dir, "weed.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		t.Fatalf("start weed: %v", err)
	}
	s.cmd, s.log = cmd, lf
}

// WaitReady waits until the S3 API answers again (after Restart).
func (s *Seaweed) WaitReady(t testing.TB) {
	t.Helper()
	store := s.Store(t, "")
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := store.List(ctx, "none/")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("SeaweedFS at %s not ready: %v", s.Endpoint, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	out := make([]int, 0, n)
	for range n {
		out = append(out, testports.FreePort(t)) // below the ephemeral range: weed binds them a moment later
	}
	return out
}

// Settings are a node's tiered storage on the server, with prefix: the
// credentials in a file of t's temporary directory (tier.LoadCredentials),
// fast uploads.
func (s *Seaweed) Settings(t testing.TB, prefix string) tier.Settings {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "s3-credentials")
	if err := os.WriteFile(creds, []byte("access_key_id="+AccessKey+"\nsecret_access_key="+SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := tier.DefaultSettings()
	st.Store = s.Config(prefix)
	st.Store.CredentialsFile = creds
	st.Upload.Interval, st.Upload.MinBackoff, st.Upload.MaxBackoff = 100*time.Millisecond, 100*time.Millisecond, time.Second
	st.CacheBytes, st.ChunkBytes = 8<<20, 1<<20
	return st
}
