package node

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// apiHandler answers one decoded request. Handlers never return nil: a
// request that gets no answer returns wire.NoResponse.
type apiHandler func(n *Node, ctx context.Context, req *wire.Request) wire.Response

type api struct {
	versions wire.VersionRange
	handle   apiHandler // nil for ApiVersions, which wire answers itself
	// waits, when set, tells whether a request may wait on other clients
	// or on time (wire.Config.Waits); unset, the handler never does.
	waits func(*wire.Request) bool
}

// always is the waits of an API whose every request may wait.
func always(*wire.Request) bool { return true }

// requestWaits is wire.Config.Waits: the API table's say, and true for
// anything outside it.
func requestWaits(req *wire.Request) bool {
	a, ok := apis[req.APIKey]
	if !ok {
		return true
	}
	return a.waits != nil && a.waits(req)
}

// apis is the one table of what this broker speaks: it is what ApiVersions
// advertises and what wire accepts, and ServeKafka dispatches through it.
// Each key's maximum is Kafka 4.1's (kmsg knows later ones, from 4.2, which
// are not offered: Produce 13, Fetch 18, ListOffsets 11, OffsetCommit and
// OffsetFetch 10, DeleteGroups 3, ApiVersions 5).
// Consumer-group APIs (FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups,
// DeleteGroups) are added here as rows pointing at their 08_*.go... files.
var apis = map[int16]api{
	// Produce v0-2 carry the old message formats, which are refused per
	// partition; they are advertised because librdkafka compresses with
	// gzip, snappy and lz4 only if the broker lists Produce v0.
	int16(kmsg.Produce):         {wire.VersionRange{Min: 0, Max: 12}, (*Node).handleProduce, nil},
	int16(kmsg.Fetch):           {wire.VersionRange{Min: 4, Max: 17}, (*Node).handleFetch, fetchWaits},
	int16(kmsg.ListOffsets):     {wire.VersionRange{Min: 1, Max: 10}, (*Node).handleListOffsets, nil},
	int16(kmsg.Metadata):        {wire.VersionRange{Min: 1, Max: 13}, (*Node).handleMetadata, nil},
	int16(kmsg.ApiVersions):     {wire.VersionRange{Min: 0, Max: 4}, nil, nil},
	int16(kmsg.CreateTopics):    {wire.VersionRange{Min: 2, Max: 7}, (*Node).handleCreateTopics, nil},
	int16(kmsg.DeleteTopics):    {wire.VersionRange{Min: 1, Max: 6}, (*Node).handleDeleteTopics, nil},
	int16(kmsg.InitProducerID):  {wire.VersionRange{Min: 0, Max: 5}, (*Node).handleInitProducerID, nil},
	int16(kmsg.DescribeConfigs): {wire.VersionRange{Min: 1, Max: 4}, (*Node).handleDescribeConfigs, nil},

	int16(kmsg.OffsetForLeaderEpoch): {wire.VersionRange{Min: 2, Max: 4}, (*Node).handleOffsetForLeaderEpoch, nil},

	int16(kmsg.ElectLeaders):               {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleElectLeaders, always},
	int16(kmsg.AlterPartitionAssignments):  {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleAlterPartitionReassignments, nil},
	int16(kmsg.ListPartitionReassignments): {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleListPartitionReassignments, nil},

	int16(kmsg.OffsetCommit):    {wire.VersionRange{Min: 0, Max: 9}, (*Node).handleOffsetCommit, nil},
	int16(kmsg.OffsetFetch):     {wire.VersionRange{Min: 0, Max: 9}, (*Node).handleOffsetFetch, nil},
	int16(kmsg.FindCoordinator): {wire.VersionRange{Min: 0, Max: 6}, (*Node).handleFindCoordinator, nil},
	int16(kmsg.JoinGroup):       {wire.VersionRange{Min: 0, Max: 9}, (*Node).handleJoinGroup, always},
	int16(kmsg.Heartbeat):       {wire.VersionRange{Min: 0, Max: 4}, (*Node).handleHeartbeat, nil},
	int16(kmsg.LeaveGroup):      {wire.VersionRange{Min: 0, Max: 5}, (*Node).handleLeaveGroup, nil},
	int16(kmsg.SyncGroup):       {wire.VersionRange{Min: 0, Max: 5}, (*Node).handleSyncGroup, always},
	int16(kmsg.DescribeGroups):  {wire.VersionRange{Min: 0, Max: 6}, (*Node).handleDescribeGroups, nil},
	int16(kmsg.ListGroups):      {wire.VersionRange{Min: 0, Max: 5}, (*Node).handleListGroups, nil},
	int16(kmsg.DeleteGroups):    {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleDeleteGroups, nil},

	int16(kmsg.ConsumerGroupHeartbeat): {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleConsumerGroupHeartbeat, nil},
	int16(kmsg.ConsumerGroupDescribe):  {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleConsumerGroupDescribe, nil},

	// Share groups (KIP-932, node/share), at the versions Kafka 4.2 serves.
	int16(kmsg.ShareGroupHeartbeat): {wire.VersionRange{Min: 1, Max: 1}, (*Node).handleShareGroupHeartbeat, nil},
	int16(kmsg.ShareGroupDescribe):  {wire.VersionRange{Min: 1, Max: 1}, (*Node).handleShareGroupDescribe, nil},
	int16(kmsg.ShareFetch):          {wire.VersionRange{Min: 1, Max: 2}, (*Node).handleShareFetch, shareFetchWaits},
	int16(kmsg.ShareAcknowledge):    {wire.VersionRange{Min: 1, Max: 2}, (*Node).handleShareAcknowledge, nil},

	int16(kmsg.DescribeShareGroupOffsets): {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleDescribeShareGroupOffsets, nil},
	int16(kmsg.AlterShareGroupOffsets):    {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleAlterShareGroupOffsets, nil},
	int16(kmsg.DeleteShareGroupOffsets):   {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleDeleteShareGroupOffsets, nil},

	int16(kmsg.DeleteRecords):           {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleDeleteRecords, nil},
	int16(kmsg.AlterConfigs):            {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleAlterConfigs, nil},
	int16(kmsg.DescribeLogDirs):         {wire.VersionRange{Min: 1, Max: 4}, (*Node).handleDescribeLogDirs, nil},
	int16(kmsg.CreatePartitions):        {wire.VersionRange{Min: 0, Max: 3}, (*Node).handleCreatePartitions, nil},
	int16(kmsg.IncrementalAlterConfigs): {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleIncrementalAlterConfigs, nil},
	int16(kmsg.OffsetDelete):            {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleOffsetDelete, nil},
	int16(kmsg.DescribeCluster):         {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleDescribeCluster, nil},
	int16(kmsg.DescribeProducers):       {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleDescribeProducers, nil},
	int16(kmsg.DescribeTopicPartitions): {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleDescribeTopicPartitions, nil},

	// Transactions v1 (KIP-98, KIP-447, KIP-588); v2 (KIP-890 part 2:
	// Produce 12 adding partitions implicitly, EndTxn 5, TxnOffsetCommit
	// 5) is not implemented and no transaction.version feature is
	// advertised, so clients stay on v1.
	int16(kmsg.AddPartitionsToTxn):   {wire.VersionRange{Min: 0, Max: 4}, (*Node).handleAddPartitionsToTxn, nil},
	int16(kmsg.AddOffsetsToTxn):      {wire.VersionRange{Min: 0, Max: 4}, (*Node).handleAddOffsetsToTxn, nil},
	int16(kmsg.EndTxn):               {wire.VersionRange{Min: 0, Max: 4}, (*Node).handleEndTxn, nil},
	int16(kmsg.TxnOffsetCommit):      {wire.VersionRange{Min: 0, Max: 4}, (*Node).handleTxnOffsetCommit, nil},
	int16(kmsg.DescribeTransactions): {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleDescribeTransactions, nil},
	int16(kmsg.ListTransactions):     {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleListTransactions, nil},

	int16(kmsg.SASLHandshake):    {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleSaslHandshake, nil},
	int16(kmsg.SASLAuthenticate): {wire.VersionRange{Min: 0, Max: 2}, (*Node).handleSaslAuthenticate, nil},

	int16(kmsg.DescribeACLs): {wire.VersionRange{Min: 0, Max: 3}, (*Node).handleDescribeACLs, nil},
	int16(kmsg.CreateACLs):   {wire.VersionRange{Min: 0, Max: 3}, (*Node).handleCreateACLs, nil},
	int16(kmsg.DeleteACLs):   {wire.VersionRange{Min: 0, Max: 3}, (*Node).handleDeleteACLs, nil},

	int16(kmsg.DescribeClientQuotas): {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleDescribeClientQuotas, nil},
	int16(kmsg.AlterClientQuotas):    {wire.VersionRange{Min: 0, Max: 1}, (*Node).handleAlterClientQuotas, nil},

	int16(kmsg.DescribeUserSCRAMCredentials): {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleDescribeUserScramCredentials, nil},
	int16(kmsg.AlterUserSCRAMCredentials):    {wire.VersionRange{Min: 0, Max: 0}, (*Node).handleAlterUserScramCredentials, nil},
}

// Versions returns the API version table for wire.Config.Versions.
func Versions() map[int16]wire.VersionRange {
	out := make(map[int16]wire.VersionRange, len(apis))
	for k, a := range apis {
		out[k] = a.versions
	}
	return out
}

// ServeKafka implements wire.Handler: it dispatches through apis and records
// per-API request counts and latency.
func (n *Node) ServeKafka(ctx context.Context, req *wire.Request) wire.Response {
	if req.APIKey == wire.APIKeyRawSASL {
		return n.handleRawSASLToken(ctx, req) // after a SaslHandshake v0
	}
	a, ok := apis[req.APIKey]
	if !ok || a.handle == nil || !a.versions.Contains(req.APIVersion) {
		// wire filters with the same table, so this is a bug; closing
		// the connection is safer than a reply the client cannot parse.
		n.log.WithField("api_key", req.APIKey).WithField("api_version", req.APIVersion).Error("request outside the API table reached the handler")
		return wire.CloseConnection
	}
	if resp, ok := n.access.Gate(ctx, req); !ok {
		return resp
	}
	start := time.Now()
	resp := a.handle(n, ctx, req)
	n.metrics.ObserveRequest(req.APIKey, start)
	n.access.RequestQuota(ctx, req, resp, time.Since(start)+req.DecodeTime) // node/access
	return resp
}

// ResponseWritten implements wire.WriteObserver: a response's encoding
// counts against its client's request_percentage as Kafka counts its
// network threads' time (node/access/quotas.go).
func (n *Node) ResponseWritten(ctx context.Context, req *wire.Request, took time.Duration) {
	n.access.RequestQuotaWritten(ctx, req, took)
}
