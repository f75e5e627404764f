package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node"
	"github.com/spool-log/spool/node/admin"
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
	retentionMs     int64 // becomes cfg.Topic.RetentionAge
	gossip          gossipFlags
	security        securityFlags
}

func newNodeCmd() *cobra.Command {
	f := &nodeFlags{cfg: node.DefaultConfig()}
	f.retentionMs = -1
	if f.cfg.Topic.RetentionAge >= 0 {
		f.retentionMs = f.cfg.Topic.RetentionAge.Milliseconds()
	}
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a Spool node (a Kafka-compatible broker)",
		Long: `Run a Spool node. With no flags it serves Kafka on 127.0.0.1:9092, its admin
HTTP API on 127.0.0.1:9644, and keeps data in ./spool-data. Every flag has a
SPOOL_* environment equivalent (--data-dir is SPOOL_DATA_DIR).

Exit status: 0 after a shutdown on SIGINT or SIGTERM; 78 when the cluster
refused the node because a live member already has its broker id (--node-id)
or name (--node-name), which a restart cannot mend (systemd units should list
78 in RestartPreventExitStatus, as the NixOS module does); 1 for any other
failure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return f.run(ctx, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.cfg.DataDir, "data-dir", f.cfg.DataDir, "directory for partitions and node state (SPOOL_DATA_DIR)")
	fs.StringVar(&f.cfg.KafkaAddr, "kafka-addr", f.cfg.KafkaAddr, "host:port the Kafka listener binds (SPOOL_KAFKA_ADDR)")
	fs.StringVar(&f.cfg.AdvertisedKafkaAddr, "advertise-kafka-addr", "", "host:port clients are told to connect to; default the bound --kafka-addr (SPOOL_ADVERTISE_KAFKA_ADDR)")
	fs.StringVar(&f.cfg.AdminAddr, "admin-addr", f.cfg.AdminAddr, "host:port of the admin HTTP API; empty disables it (SPOOL_ADMIN_ADDR)")
	fs.BoolVar(&f.cfg.EnablePprof, "enable-pprof", false, "serve Go's profiler at /debug/pprof/ on the admin API, which peers reach too; off by default (SPOOL_ENABLE_PPROF)")
	fs.Int32Var(&f.cfg.NodeID, "node-id", f.cfg.NodeID, "broker id, unique in the cluster (SPOOL_NODE_ID)")
	fs.StringVar(&f.cfg.Rack, "rack", "", "rack reported to clients (SPOOL_RACK)")
	fs.StringVar(&f.cfg.RaftAddr, "raft-addr", f.cfg.RaftAddr, "host:port the replication (Raft) transport binds; default the --kafka-addr host on any free port (the last run's when it is free), advertised to peers by gossip (SPOOL_RAFT_ADDR)")
	fs.StringVar(&f.cfg.AdvertisedRaftAddr, "advertise-raft-addr", "", "host:port peers reach the replication transport at; default the bound --raft-addr (SPOOL_ADVERTISE_RAFT_ADDR)")
	fs.Int16Var(&f.cfg.DefaultReplicationFactor, "default-replication-factor", f.cfg.DefaultReplicationFactor, "replication factor of topics created without one, lowered to the largest odd number not above it and the brokers known; above 1 each partition's replicas form a Raft group (SPOOL_DEFAULT_REPLICATION_FACTOR)")
	fs.BoolVar(&f.cfg.AutoRebalance, "auto-rebalance", f.cfg.AutoRebalance, "move replicated partitions to where placement over the roster puts them when brokers join or are decommissioned, a few at a time; manual assignments stay; --auto-rebalance=false leaves moves to spool rebalance apply (SPOOL_AUTO_REBALANCE)")
	fs.Int64Var(&f.cfg.ReplicaCopyBytesPerSecond, "replica-copy-bytes-per-second", 0, "bytes per second this node serves to replicas copying a partition's records (a moved partition's new replica, a follower far behind) and sends to new replicas catching up after the copy, all together; voters are never held back; 0 is no bound (SPOOL_REPLICA_COPY_BYTES_PER_SECOND)")
	fs.IntVar(&f.cfg.RebalanceMaxMoves, "rebalance-max-moves", f.cfg.RebalanceMaxMoves, "partition moves automatic rebalancing and spool decommission's drains keep under way at once, cluster-wide (SPOOL_REBALANCE_MAX_MOVES)")
	fs.DurationVar(&f.cfg.FailedBrokerGrace, "failed-broker-grace", f.cfg.FailedBrokerGrace, "with --auto-rebalance, how long a broker may be down before its replicas are moved to live brokers; a reboot within it moves nothing (SPOOL_FAILED_BROKER_GRACE)")
	fs.BoolVar(&f.cfg.Raft.Sync, "raft-fsync", f.cfg.Raft.Sync, "fsync a replicated partition's appends (one fsync per round of many) before they are acknowledged or sent to the other replicas; false leaves durability to --flush-policy and the other replicas (SPOOL_RAFT_FSYNC)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error (SPOOL_LOG_LEVEL)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json (SPOOL_LOG_FORMAT)")
	fs.BoolVar(&f.cfg.AutoCreateTopics, "auto-create-topics", f.cfg.AutoCreateTopics, "create unknown topics on first use (SPOOL_AUTO_CREATE_TOPICS)")
	fs.Int32Var(&f.cfg.DefaultPartitions, "default-partitions", f.cfg.DefaultPartitions, "partitions of auto-created topics (SPOOL_DEFAULT_PARTITIONS)")
	fs.Int32Var(&f.cfg.MaxRequestBytes, "max-request-bytes", f.cfg.MaxRequestBytes, "largest Kafka request accepted, in bytes (SPOOL_MAX_REQUEST_BYTES)")
	fs.Int64Var(&f.cfg.QueuedMaxRequestBytes, "queued-max-request-bytes", f.cfg.QueuedMaxRequestBytes, "memory for Kafka requests being read and queued, across all connections; past it the node stops reading sockets until some is returned (SPOOL_QUEUED_MAX_REQUEST_BYTES)")
	fs.DurationVar(&f.cfg.RequestReadTimeout, "request-read-timeout", f.cfg.RequestReadTimeout, "close a connection whose Kafka request has begun but is not whole after this long (SPOOL_REQUEST_READ_TIMEOUT)")
	fs.BoolVar(&f.cfg.Sendfile, "sendfile", f.cfg.Sendfile, "send Fetch records with sendfile(2); --sendfile=false uses a user-space copy (SPOOL_SENDFILE)")
	fs.StringVar(&f.flushPolicy, "flush-policy", "os", "when appends are fsynced: every-append, interval or os (SPOOL_FLUSH_POLICY)")
	fs.DurationVar(&f.flushInterval, "flush-interval", time.Second, "fsync interval for --flush-policy interval (SPOOL_FLUSH_INTERVAL)")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown waits for in-flight requests (SPOOL_SHUTDOWN_TIMEOUT)")
	// Broker-wide topic defaults; a topic's own configs override them.
	fs.Int64Var(&f.retentionMs, "retention-ms", f.retentionMs, "default retention.ms: how long records are kept; -1 keeps them forever (SPOOL_RETENTION_MS)")
	fs.Int64Var(&f.cfg.Topic.RetentionBytes, "retention-bytes", f.cfg.Topic.RetentionBytes, "default retention.bytes per partition; -1 means unbounded (SPOOL_RETENTION_BYTES)")
	fs.DurationVar(&f.cfg.RetentionCheckInterval, "retention-check-interval", f.cfg.RetentionCheckInterval, "how often every partition deletes the segments its retention no longer keeps, as Kafka's log.retention.check.interval.ms (SPOOL_RETENTION_CHECK_INTERVAL)")
	fs.DurationVar(&f.cfg.QuarantineRetention, "quarantine-retention", f.cfg.QuarantineRetention, "how long data the node drops (deleted topics' partitions, cut bytes) stays in DATA/quarantine before it is reclaimed; a negative `duration` keeps it until spool quarantine purge (SPOOL_QUARANTINE_RETENTION)")
	fs.Int64Var(&f.cfg.Topic.SegmentBytes, "segment-bytes", f.cfg.Topic.SegmentBytes, "default segment.bytes: size at which a partition rolls to a new segment file (SPOOL_SEGMENT_BYTES)")
	// Consumer groups, named after Kafka's broker settings.
	fs.DurationVar(&f.cfg.Groups.InitialRebalanceDelay, "group-initial-rebalance-delay", f.cfg.Groups.InitialRebalanceDelay, "how long a new group's first rebalance waits for more members (SPOOL_GROUP_INITIAL_REBALANCE_DELAY)")
	fs.DurationVar(&f.cfg.Groups.MinSessionTimeout, "group-min-session-timeout", f.cfg.Groups.MinSessionTimeout, "smallest session timeout a group member may ask for (SPOOL_GROUP_MIN_SESSION_TIMEOUT)")
	fs.DurationVar(&f.cfg.Groups.MaxSessionTimeout, "group-max-session-timeout", f.cfg.Groups.MaxSessionTimeout, "largest session timeout a group member may ask for (SPOOL_GROUP_MAX_SESSION_TIMEOUT)")
	fs.DurationVar(&f.cfg.Groups.ConsumerSessionTimeout, "group-consumer-session-timeout", f.cfg.Groups.ConsumerSessionTimeout, "how long a consumer-protocol (KIP-848) member may go without a heartbeat before its partitions move (SPOOL_GROUP_CONSUMER_SESSION_TIMEOUT)")
	fs.DurationVar(&f.cfg.Groups.ConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", f.cfg.Groups.ConsumerHeartbeatInterval, "how often consumer-protocol (KIP-848) members are asked to heartbeat (SPOOL_GROUP_CONSUMER_HEARTBEAT_INTERVAL)")
	fs.Int32Var(&f.cfg.Groups.OffsetsTopicPartitions, "offsets-topic-partitions", f.cfg.Groups.OffsetsTopicPartitions, "partitions of __consumer_offsets when it is created; fixed afterwards (SPOOL_OFFSETS_TOPIC_PARTITIONS)")
	fs.Int16Var(&f.cfg.Groups.OffsetsTopicReplicationFactor, "offsets-topic-replication-factor", 3, "replication factor of __consumer_offsets when it is created: the largest odd number not above it and the brokers known (SPOOL_OFFSETS_TOPIC_REPLICATION_FACTOR)")
	// The cluster: gossip membership and its encryption.
	addGossipFlags(fs, &f.gossip)
	// Listeners, TLS and SASL (node_security.go).
	addSecurityFlags(fs, &f.security, &f.cfg)
	// The CRC scrubber of sealed segments (node_scrub.go).
	addScrubFlags(fs, &f.cfg)
	// How client quotas are measured (node_quota.go).
	addQuotaFlags(fs, &f.cfg)
	// Tiered storage to an S3-compatible store (node_tier.go).
	addTierFlags(fs, &f.cfg)
	return cmd
}

func newLogger(level, format string, out io.Writer) (*logrus.Logger, error) {
	log := logrus.New()
	log.SetOutput(out)
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

// config is the node.Config the flags describe.
func (f *nodeFlags) config() (node.Config, error) {
	cfg := f.cfg
	var err error
	if cfg.Topic.Flush, err = parseFlushPolicy(f.flushPolicy); err != nil {
		return cfg, err
	}
	cfg.Topic.FlushEvery = f.flushInterval
	if err := f.gossip.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := f.security.apply(&cfg); err != nil {
		return cfg, err
	}
	switch {
	case f.retentionMs < -1:
		return cfg, fmt.Errorf("--retention-ms %d: want -1 (forever) or more", f.retentionMs)
	case f.retentionMs == -1:
		cfg.Topic.RetentionAge = -1
	default:
		cfg.Topic.RetentionAge = time.Duration(f.retentionMs) * time.Millisecond
	}
	return cfg, nil
}

// run starts the node, logs that it is ready, and shuts it down gracefully
// when ctx ends (SIGINT or SIGTERM). Logs go to logOut (stderr).
func (f *nodeFlags) run(ctx context.Context, logOut io.Writer) error {
	log, err := newLogger(f.logLevel, f.logFormat, logOut)
	if err != nil {
		return err
	}
	if flag, ok := admin.SecretOnCommandLine(os.Args[1:]); ok {
		log.WithField("flag", flag).Warn("a secret was given on the command line, where every local user can read it (ps, /proc/PID/cmdline); give it as a file (--gossip-key-file) or in the environment (SPOOL_GOSSIP_KEY) instead")
	}
	// Nothing in this process shows the secret from here on, should
	// something print or serve os.Args.
	os.Args = admin.RedactArgs(os.Args)
	cfg, err := f.config()
	if err != nil {
		return err
	}
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
		"listeners":  n.ListenerAddrs(),
		"admin_addr": n.AdminAddr(),
		"gossip":     n.Membership().Local().GossipAddr,
		"data_dir":   cfg.DataDir,
		"flush":      f.flushPolicy,
		"version":    version,
	}).Info("spool node ready")

	// A node the cluster refuses (duplicate broker id or name) exits, as
	// Kafka's broker does on a duplicate broker.id: running on, it could
	// only confuse clients.
	// SIGHUP re-reads the TLS files, the admin token file and the SASL
	// credentials file.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var failed error
wait:
	for {
		select {
		case <-hup:
			if err := n.Reload(); err != nil {
				log.WithError(err).Error("SIGHUP: reload failed; the previous certificates and credentials stay in use")
			} else {
				log.Info("SIGHUP: TLS files, admin token and SASL credentials reloaded")
			}
		case <-ctx.Done():
			log.Info("shutting down")
			break wait
		case failed = <-n.Failed():
			log.WithError(failed).Error("exiting")
			break wait
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		err = errors.Join(failed, fmt.Errorf("shutdown: %w", err))
		if failed != nil {
			return withExitStatus(exitRefused, err)
		}
		return err
	}
	if failed != nil {
		return withExitStatus(exitRefused, failed) // exit_status.go
	}
	log.Info("spool node stopped")
	return nil
}

// parseFlushPolicy parses a --flush-policy value: every-append, interval or
// os.
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
