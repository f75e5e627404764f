// Package nodetest starts in-process Spool nodes for the tests of packages
// that drive one (the CLI, its client package, the bench). It imports the
// broker, so it lives beside it under node/: nothing under internal/ may
// import node (see imports_test.go at the repository's root).
package nodetest

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
)

// Start starts a node on free loopback ports, its data in a temporary
// directory, and stops it when the test ends; each option adjusts its
// config first. It returns once the node is admitted (until then it closes
// every Kafka connection, which a client would report as a node that does
// not answer) and has told gossip it serves (its "sv" tag: until then
// `spool members` shows it joining, not alive).
func Start(t testing.TB, options ...func(*node.Config)) *node.Node {
	t.Helper()
	n := StartUnadmitted(t, options...)
	retry.Run(t, 20*time.Second, func() error { return retry.Check(n.Admitted(), "the test node is not admitted") })
	retry.Run(t, 20*time.Second, func() error {
		return retry.Check(n.Membership().Local().Serving >= 0, "the test node has not announced that it serves")
	})
	return n
}

// StartUnadmitted is Start without waiting for the node's admission, as
// an operator's script starts nodes in the background.
func StartUnadmitted(t testing.TB, options ...func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.Gossip.BindAddr = "127.0.0.1:0"
	cfg.Gossip.Timings = "fast"
	cfg.AutoRebalance = false // tests that want it turn it on
	log := logrus.New()
	log.SetOutput(io.Discard)
	if os.Getenv("SPOOL_TEST_LOG") != "" {
		// For a failure to be read: the nodes' logs, tagged by node.
		log.SetOutput(os.Stderr)
		log.SetLevel(logrus.DebugLevel)
	}
	cfg.Logger = log
	for _, o := range options {
		o(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n.Shutdown(ctx)
	})
	return n
}
