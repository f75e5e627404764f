package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/partition"
)

// nodeFlags are `spool node`'s settings before they become a node.Config.
type nodeFlags struct {
	cfg             node.Config
	logLevel        string
	logFormat       string
	flushPolicy     string
	flushInterval   time.Duration
	shutdownTimeout time.Duration
}

func newNodeCmd() *cobra.Command {
	f := &nodeFlags{cfg: node.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a Spool node (a Kafka-compatible broker)",
		Long: `Run a Spool node. With no flags it serves Kafka on 127.0.0.1:9092, its admin
HTTP API on 127.0.0.1:9644, and keeps data in ./spool-data. Every flag has a
SPOOL_* environment equivalent (--data-dir is SPOOL_DATA_DIR).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return f.run(ctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.cfg.DataDir, "data-dir", f.cfg.DataDir, "directory for partitions and node state (SPOOL_DATA_DIR)")
	fs.StringVar(&f.cfg.KafkaAddr, "kafka-addr", f.cfg.KafkaAddr, "host:port the Kafka listener binds (SPOOL_KAFKA_ADDR)")
	fs.StringVar(&f.cfg.AdvertisedKafkaAddr, "advertise-kafka-addr", "", "host:port clients are told to connect to; default the bound --kafka-addr (SPOOL_ADVERTISE_KAFKA_ADDR)")
	fs.StringVar(&f.cfg.AdminAddr, "admin-addr", f.cfg.AdminAddr, "host:port of the admin HTTP API; empty disables it (SPOOL_ADMIN_ADDR)")
	fs.Int32Var(&f.cfg.NodeID, "node-id", f.cfg.NodeID, "broker id, unique in the cluster (SPOOL_NODE_ID)")
	fs.StringVar(&f.cfg.Rack, "rack", "", "rack reported to clients (SPOOL_RACK)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error (SPOOL_LOG_LEVEL)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json (SPOOL_LOG_FORMAT)")
	fs.BoolVar(&f.cfg.AutoCreateTopics, "auto-create-topics", f.cfg.AutoCreateTopics, "create unknown topics on first use (SPOOL_AUTO_CREATE_TOPICS)")
	fs.Int32Var(&f.cfg.DefaultPartitions, "default-partitions", f.cfg.DefaultPartitions, "partitions of auto-created topics (SPOOL_DEFAULT_PARTITIONS)")
	fs.Int32Var(&f.cfg.MaxRequestBytes, "max-request-bytes", f.cfg.MaxRequestBytes, "largest Kafka request accepted, in bytes (SPOOL_MAX_REQUEST_BYTES)")
	fs.StringVar(&f.flushPolicy, "flush-policy", "os", "when appends are fsynced: every-append, interval or os (SPOOL_FLUSH_POLICY)")
	fs.DurationVar(&f.flushInterval, "flush-interval", time.Second, "fsync interval for --flush-policy interval (SPOOL_FLUSH_INTERVAL)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for in-flight requests (SPOOL_SHUTDOWN_TIMEOUT)")
	return cmd
}

func parseFlushPolicy(s string) (partition.FlushPolicy, error) {
	switch s {
	case "every-append":
		return partition.FlushEveryAppend, nil
	case "interval":
		return partition.FlushInterval, nil
	case "os":
		return partition.FlushOS, nil
	}
	return 0, fmt.Errorf("flush policy %q: want every-append, interval or os", s)
}

func newLogger(level, format string) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	log.SetLevel(lvl)
	switch strings.ToLower(format) {
	case "text":
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		log.SetFormatter(&logrus.JSONFormatter{})
	default:
		return nil, fmt.Errorf("log format %q: want text or json", format)
	}
	return log, nil
}

// run starts the node, logs that it is ready, and shuts it down gracefully
// when ctx ends (SIGINT or SIGTERM).
func (f *nodeFlags) run(ctx context.Context) error {
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfg := f.cfg
	if cfg.Topic.Flush, err = parseFlushPolicy(f.flushPolicy); err != nil {
		return err
	}
	cfg.Topic.FlushEvery = f.flushInterval
	cfg.Logger = log

	n, err := node.New(cfg)
	if err != nil {
		return err
	}
	if err := n.Start(); err != nil {
		return err
	}
	log.WithFields(logrus.Fields{
		"node":       cfg.NodeID,
		"kafka_addr": n.KafkaAddr(),
		"advertised": n.AdvertisedKafkaAddr(),
		"admin_addr": n.AdminAddr(),
		"data_dir":   cfg.DataDir,
		"flush":      f.flushPolicy,
	}).Info("spool node ready")

	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("spool node stopped")
	return nil
}
