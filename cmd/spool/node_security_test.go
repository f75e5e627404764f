package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spool-log/spool/internal/testcerts"
)

// TestNodeSecurityFlags: `spool node` with a SASL_SSL --listener beside
// the plaintext --kafka-addr, users from a file `spool user hash` wrote and
// a bootstrap user from the environment, serves franz-go over TLS + SCRAM.
func TestNodeSecurityFlags(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "cli-ca")
	certFile, keyFile := ca.Server(t, "node").Write(t, dir, "server")
	users, _, err := runCLI(t, "bob-pw\n", "user", "hash", "bob", "--mechanism", "SCRAM-SHA-512")
	if err != nil {
		t.Fatalf("user hash: %v", err)
	}
	if strings.Contains(users, "bob-pw") || !strings.HasPrefix(users, "bob SCRAM-SHA-512 4096 ") {
		t.Fatalf("user hash printed %q", users)
	}
	credFile := filepath.Join(dir, "users")
	if err := os.WriteFile(credFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(bootstrapPasswordEnv, "alice-pw")
	external := freeAddr(t)
	startCLINode(t, "--listener", "EXTERNAL=SASL_SSL://"+external,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--sasl-credentials-file", credFile, "--sasl-bootstrap-user", "alice")

	for user, pw := range map[string]string{"alice": "alice-pw", "bob": "bob-pw"} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(external), kgo.DialTLSConfig(testcerts.ClientConfig(ca)),
			kgo.SASL(scram.Auth{User: user, Pass: pw}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("%s over TLS + SCRAM: %v", user, err)
		}
		if len(meta.Brokers) != 1 || !strings.HasSuffix(external, ":"+strconv.Itoa(int(meta.Brokers[0].Port))) {
			t.Fatalf("%s: metadata brokers %+v, want the EXTERNAL listener %s", user, meta.Brokers, external)
		}
	}
}

func TestNodeSecurityFlagsRejected(t *testing.T) {
	t.Setenv(bootstrapPasswordEnv, "")
	for _, extra := range [][]string{
		{"--kafka-security-protocol", "SASL_TLS"},
		{"--listener", "EXTERNAL:9093"},
		{"--listener", "EXTERNAL=SSL://127.0.0.1:0"}, // SSL without certificate
		{"--advertise-listener", "NOPE=example.com:9093"},
		{"--sasl-bootstrap-user", "alice"},                      // no password anywhere
		{"--listener", "EXTERNAL=SASL_PLAINTEXT://127.0.0.1:0"}, // SASL without users
	} {
		args := append([]string{"node", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--admin-addr", "", "--gossip-addr", "127.0.0.1:0"}, extra...)
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("spool %v succeeded", extra)
		}
	}
}
