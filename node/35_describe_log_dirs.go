package node

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/spool-log/spool/wire"
)

// DescribeLogDirs: v1-4
//
// Behavior:
// * Authorization: DESCRIBE on the cluster, else no directories and
//   (v3+) CLUSTER_AUTHORIZATION_FAILED.
// * A node has one log dir, its data directory (absolute path), holding
//   every partition it has open. Each partition is listed, from its replica
//   (node/replica), with its size (the bytes of its segments) and its
//   offset lag (the high watermark minus the local log end, never below 0,
//   as Kafka computes it: 0 for every partition until replication lands,
//   since the high watermark is the local end).
// * Topics null lists every local partition; otherwise the named
//   partitions this node holds (others are left out, as in Kafka).
//   Clients send the request to every broker they want to know about.
// * TotalBytes and UsableBytes are from statfs(2) of the data directory;
//   when statfs fails the dir gets KAFKA_STORAGE_ERROR.
// * On a node with tiered storage a second dir, s3://<bucket>/<prefix>
//   (tier.Service.LogDir), lists the hosted tiered partitions with the
//   size of their remote segments (TotalBytes and UsableBytes -1: not
//   known), so `spool topic describe` can show local and remote bytes.
//
// Version notes:
// * v0 is not advertised (KIP-896 removed it in Kafka 4.0).
// * v1: ThrottleMillis
// * v2: flexible versions
// * v3: top-level ErrorCode
// * v4: TotalBytes, UsableBytes
// * v5 (IsCordoned, Kafka 4.2) is not advertised: Kafka 4.1's maximum is 4.

func (n *Node) handleDescribeLogDirs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // v3+; before, no dirs says it
		return resp
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = n.cfg.DataDir
	if abs, err := filepath.Abs(n.cfg.DataDir); err == nil {
		dir.Dir = abs
	}
	var st unix.Statfs_t
	if err := unix.Statfs(n.cfg.DataDir, &st); err != nil {
		n.log.WithError(err).WithField("dir", dir.Dir).Warn("statfs data dir")
		dir.ErrorCode = kerr.KafkaStorageError.Code
	} else {
		dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	}

	var want map[tp]bool
	if req.Topics != nil {
		want = make(map[tp]bool)
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				want[tp{rt.Topic, p}] = true
			}
		}
	}
	byTopic := make(map[string]*kmsg.DescribeLogDirsResponseDirTopic)
	remote := kmsg.NewDescribeLogDirsResponseDir()
	remote.Dir, remote.TotalBytes, remote.UsableBytes = n.tier.LogDir(), -1, -1
	remoteByTopic := make(map[string]*kmsg.DescribeLogDirsResponseDirTopic)
	for _, p := range n.parts.All() {
		if want != nil && !want[tp{p.Topic, p.Index}] {
			continue
		}
		sp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		sp.Partition = p.Index
		sp.Size = p.Replica.Size()
		sp.OffsetLag = max(p.Replica.HighWatermark()-p.Replica.LogEndOffset(), 0)
		addLogDirPartition(byTopic, p.Topic, sp)
		if bytes, tiered := n.remote(p).Bytes(); tiered {
			rp := sp
			rp.Size, rp.OffsetLag = bytes, 0
			addLogDirPartition(remoteByTopic, p.Topic, rp)
		}
	}
	resp.Dirs = append(resp.Dirs, logDirTopics(dir, byTopic))
	if remote.Dir != "" {
		resp.Dirs = append(resp.Dirs, logDirTopics(remote, remoteByTopic))
	}
	return resp
}

func addLogDirPartition(byTopic map[string]*kmsg.DescribeLogDirsResponseDirTopic, topic string, sp kmsg.DescribeLogDirsResponseDirTopicPartition) {
	t := byTopic[topic]
	if t == nil {
		nt := kmsg.NewDescribeLogDirsResponseDirTopic()
		nt.Topic = topic
		t = &nt
		byTopic[topic] = t
	}
	t.Partitions = append(t.Partitions, sp)
}

// logDirTopics is dir with byTopic's topics, each sorted.
func logDirTopics(dir kmsg.DescribeLogDirsResponseDir, byTopic map[string]*kmsg.DescribeLogDirsResponseDirTopic) kmsg.DescribeLogDirsResponseDir {
	for _, t := range byTopic {
		slices.SortFunc(t.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(a.Partition - b.Partition) })
		dir.Topics = append(dir.Topics, *t)
	}
	slices.SortFunc(dir.Topics, func(a, b kmsg.DescribeLogDirsResponseDirTopic) int { return strings.Compare(a.Topic, b.Topic) })
	return dir
}
