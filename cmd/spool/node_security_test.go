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
	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/tlsfiles"
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
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--listener-no-client-certs", "EXTERNAL",
		"--sasl-credentials-file", credFile, "--sasl-bootstrap-user", "alice")

	// The client commands over TLS + SCRAM, the password from the environment.
	t.Setenv(saslPasswordEnv, "bob-pw")
	caFile := ca.WriteCA(t, dir, "ca")
	secure := []string{"--brokers", external, "--tls", "--tls-ca-file", caFile, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "bob", "--timeout", "10s"}
	if out, errOut, err := runCLI(t, "", append([]string{"topic", "create", "cli-secure"}, secure...)...); err != nil {
		t.Fatalf("topic create over SASL_SSL: %v\n%s%s", err, out, errOut)
	}
	if _, errOut, err := runCLI(t, "one\ntwo\n", append([]string{"produce", "cli-secure"}, secure...)...); err != nil {
		t.Fatalf("produce over SASL_SSL: %v\n%s", err, errOut)
	}
	out, errOut, err := runCLI(t, "", append([]string{"consume", "cli-secure", "--from", "beginning", "-n", "2"}, secure...)...)
	if err != nil || out != "one\ntwo\n" {
		t.Fatalf("consume over SASL_SSL: %q, %v\n%s", out, err, errOut)
	}
	t.Setenv(saslPasswordEnv, "wrong")
	if _, _, err := runCLI(t, "", append([]string{"topic", "list"}, secure...)...); err == nil {
		t.Fatal("topic list with a wrong password succeeded")
	}

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
		{"--listener-no-client-certs", "NOPE"},
		{"--sasl-bootstrap-user", "alice"},                      // no password anywhere
		{"--listener", "EXTERNAL=SASL_PLAINTEXT://127.0.0.1:0"}, // SASL without users
		{"--sasl-user", "alice"},                                // a client flag
		{"--admin-token", "secret"},                             // a client flag
		{"--admin-token-for-reads"},                             // no --admin-token-file
		{"--raft-tls-cert-file", "/nonexistent.crt"},            // no key, no CA
	} {
		args := append([]string{"node", "--data-dir", t.TempDir(), "--kafka-addr", "127.0.0.1:0", "--admin-addr", "", "--gossip-addr", "127.0.0.1:0"}, extra...)
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("spool %v succeeded", extra)
		}
	}
}

// TestClientCommandsAdminHTTPS: the admin commands reach an https:// admin
// API that requires client certificates.
func TestClientCommandsAdminHTTPS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "admin-ca")
	certFile, keyFile := ca.ServerAndClient(t, "node").Write(t, dir, "admin")
	clientCert, clientKey := ca.Client(t, "operator").Write(t, dir, "operator")
	caFile := ca.WriteCA(t, dir, "ca")
	n := testNode(t, func(c *node.Config) {
		c.AdminTLS = tlsfiles.Files{CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile}
	})
	args := []string{"members", "--admin", "https://" + n.AdminAddr(), "--tls-ca-file", caFile, "--timeout", "10s"}
	out, errOut, err := runCLI(t, "", append(args, "--client-cert-file", clientCert, "--client-key-file", clientKey)...)
	if err != nil || !strings.Contains(out, "alive") {
		t.Fatalf("members over https: %q, %v\n%s", out, err, errOut)
	}
	if _, _, err := runCLI(t, "", args...); err == nil {
		t.Fatal("members over https without a client certificate succeeded")
	}
}
