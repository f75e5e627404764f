package node

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// versionConn is one connection to a node that sends requests at exactly
// the version they carry.
type versionConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dialVersions(t testing.TB, addr string) *versionConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &versionConn{t: t, c: c}
}

// exchange sends req and returns the response body as sent (correlation id
// and header tags removed), or an error if the node closed the connection.
func (vc *versionConn) exchange(req kmsg.Request) ([]byte, error) {
	vc.corr++
	vc.c.SetDeadline(time.Now().Add(20 * time.Second))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("versions-test")).AppendRequest(nil, req, vc.corr)
	if _, err := vc.c.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(vc.c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(vc.c, body); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != vc.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, vc.corr)
	}
	skip := 4
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		if len(body) < 5 || body[4] != 0 {
			return nil, errors.New("flexible response header without an empty tag section")
		}
		skip++
	}
	return body[skip:], nil
}

// roundTrip sends req at its version and decodes the answer with kmsg. The
// answer must be exactly what kmsg encodes for the decoded response: no
// byte more, no byte less, no field written differently.
func roundTrip[R kmsg.Response](t testing.TB, vc *versionConn, req kmsg.Request) R {
	t.Helper()
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	body, err := vc.exchange(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s: kmsg cannot decode the response: %v", name, err)
	}
	if again := resp.AppendTo(nil); !bytes.Equal(again, body) {
		at := 0
		for at < min(len(again), len(body)) && again[at] == body[at] {
			at++
		}
		t.Fatalf("%s: response differs from kmsg's encoding of it at byte %d (sent %d bytes, kmsg %d)", name, at, len(body), len(again))
	}
	return resp.(R)
}

func versionsOf(key kmsg.Key) []int16 {
	rng := apis[int16(key)].versions
	var out []int16
	for v := rng.Min; v <= rng.Max; v++ {
		out = append(out, v)
	}
	return out
}

// TestEveryAdvertisedVersionIsServed sends a request of every key and every
// version the API table advertises to a real node, each meaningful (records
// produced and read back, groups joined, topics created and deleted by name
// and id), and checks both the answer and that its bytes are kmsg's.
func TestEveryAdvertisedVersionIsServed(t *testing.T) {
	cfg := groupTestConfig(t, t.TempDir())
	// Its requests are anonymous and create ACLs at every version: with
	// Kafka's default the first one would close the cluster to them.
	cfg.AllowEveryoneIfNoACL = true
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "orders", 1, nil)
	spec, _ := n.catalog.Topic("orders")
	vc := dialVersions(t, n.KafkaAddr())
	tested := map[int16][]int16{}
	mark := func(req kmsg.Request) { tested[req.Key()] = append(tested[req.Key()], req.GetVersion()) }

	// Produce: v0-2 are refused per partition, v3+ append.
	produced := int64(0)
	for _, v := range versionsOf(kmsg.Produce) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, time.Now().UnixMilli(), fmt.Sprintf("v%d", v))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.ProduceResponse](t, vc, req)
		mark(req)
		p := resp.Topics[0].Partitions[0]
		switch {
		case v < 3 && p.ErrorCode != kerr.UnsupportedForMessageFormat.Code:
			t.Fatalf("Produce v%d: error %d, want UNSUPPORTED_FOR_MESSAGE_FORMAT", v, p.ErrorCode)
		case v >= 3 && (p.ErrorCode != 0 || p.BaseOffset != produced):
			t.Fatalf("Produce v%d: error %d offset %d, want offset %d", v, p.ErrorCode, p.BaseOffset, produced)
		case v >= 3:
			produced++
		}
	}

	// Fetch: every version reads every record; v13+ by topic id.
	for _, v := range versionsOf(kmsg.Fetch) {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = v, 10, 1, 1<<20
		req.SessionID, req.SessionEpoch = 0, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "orders", spec.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.FetchResponse](t, vc, req)
		mark(req)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.HighWatermark != produced || len(p.RecordBatches) == 0 {
			t.Fatalf("Fetch v%d: error %d hwm %d, %d record bytes", v, p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
		}
		if v >= 13 && resp.Topics[0].TopicID != spec.ID {
			t.Fatalf("Fetch v%d: topic id %x, want %x", v, resp.Topics[0].TopicID, spec.ID)
		}
	}

	// ListOffsets: latest everywhere; -4 (earliest local) from v8, -5
	// (latest tiered: nothing) from v9.
	for _, v := range versionsOf(kmsg.ListOffsets) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = v
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "orders"
		for _, ts := range []int64{-1, -4, -5} {
			if (ts == -4 && v < 8) || (ts == -5 && v < 9) {
				continue
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = ts
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.ListOffsetsResponse](t, vc, req)
		mark(req)
		want := map[int64]int64{-1: produced, -4: 0, -5: -1}
		for i, p := range resp.Topics[0].Partitions {
			ts := rt.Partitions[i].Timestamp
			if p.ErrorCode != 0 || p.Offset != want[ts] {
				t.Fatalf("ListOffsets v%d timestamp %d: error %d offset %d, want %d", v, ts, p.ErrorCode, p.Offset, want[ts])
			}
		}
	}

	for _, v := range versionsOf(kmsg.Metadata) {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.MetadataResponse](t, vc, req)
		mark(req)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Leader != n.NodeID() {
			t.Fatalf("Metadata v%d: %+v", v, resp.Topics)
		}
	}

	// OffsetForLeaderEpoch: the node's only epoch (0) ends at the log end;
	// an epoch past it is UNDEFINED; a newer CurrentLeaderEpoch is
	// UNKNOWN_LEADER_EPOCH.
	for _, v := range versionsOf(kmsg.OffsetForLeaderEpoch) {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "orders"
		for _, ep := range [][2]int32{{0, -1}, {0, 0}, {7, 0}, {0, 1}} {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.LeaderEpoch, rp.CurrentLeaderEpoch = ep[0], ep[1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.OffsetForLeaderEpochResponse](t, vc, req)
		mark(req)
		want := []kmsg.OffsetForLeaderEpochResponseTopicPartition{
			{LeaderEpoch: 0, EndOffset: produced},
			{LeaderEpoch: 0, EndOffset: produced},
			{LeaderEpoch: -1, EndOffset: -1},
			{ErrorCode: kerr.UnknownLeaderEpoch.Code, LeaderEpoch: -1, EndOffset: -1},
		}
		for i, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != want[i].ErrorCode || p.LeaderEpoch != want[i].LeaderEpoch || p.EndOffset != want[i].EndOffset {
				t.Fatalf("OffsetForLeaderEpoch v%d partition request %d: error %d epoch %d end %d, want %+v", v, i, p.ErrorCode, p.LeaderEpoch, p.EndOffset, want[i])
			}
		}
	}

	for _, v := range versionsOf(kmsg.ApiVersions) {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "versions-test", "1.0"
		resp := roundTrip[*kmsg.ApiVersionsResponse](t, vc, req)
		mark(req)
		checkAdvertised(t, fmt.Sprintf("ApiVersions v%d", v), resp)
	}

	// CreateTopics v2-7 create ct-2..ct-7; DeleteTopics v1-6 delete them,
	// v6 by id.
	for _, v := range versionsOf(kmsg.CreateTopics) {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("ct-%d", v), 1, 1
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.CreateTopicsResponse](t, vc, req)
		mark(req)
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics v%d: error %d", v, resp.Topics[0].ErrorCode)
		}
	}
	for _, v := range versionsOf(kmsg.DeleteTopics) {
		name := fmt.Sprintf("ct-%d", v+1)
		ct, ok := n.catalog.Topic(name)
		if !ok {
			t.Fatalf("%s was not created", name)
		}
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		if v < 6 {
			req.TopicNames = []string{name}
		} else {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.TopicID = ct.ID
			unknown := kmsg.NewDeleteTopicsRequestTopic()
			unknown.TopicID = [16]byte{1}
			req.Topics = append(req.Topics, rt, unknown)
		}
		resp := roundTrip[*kmsg.DeleteTopicsResponse](t, vc, req)
		mark(req)
		if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].Topic == nil || *resp.Topics[0].Topic != name {
			t.Fatalf("DeleteTopics v%d: %+v", v, resp.Topics[0])
		}
		if _, ok := n.catalog.Topic(name); ok {
			t.Fatalf("DeleteTopics v%d: %s still exists", v, name)
		}
		if v >= 6 {
			if u := resp.Topics[1]; u.ErrorCode != kerr.UnknownTopicID.Code || u.ErrorMessage == nil {
				t.Fatalf("DeleteTopics v6 of an unknown id: %+v", u)
			}
			if resp.Topics[0].TopicID != ct.ID {
				t.Fatalf("DeleteTopics v6: id %x, want %x", resp.Topics[0].TopicID, ct.ID)
			}
		}
	}

	for _, v := range versionsOf(kmsg.InitProducerID) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionTimeoutMillis = v, 60000
		resp := roundTrip[*kmsg.InitProducerIDResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 {
			t.Fatalf("InitProducerID v%d: error %d id %d", v, resp.ErrorCode, resp.ProducerID)
		}
	}

	for _, v := range versionsOf(kmsg.DescribeConfigs) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version = v
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		req.Resources = append(req.Resources, r)
		resp := roundTrip[*kmsg.DescribeConfigsResponse](t, vc, req)
		mark(req)
		if resp.Resources[0].ErrorCode != 0 || len(resp.Resources[0].Configs) == 0 {
			t.Fatalf("DescribeConfigs v%d: %+v", v, resp.Resources[0])
		}
	}

	for _, v := range versionsOf(kmsg.FindCoordinator) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "g", []string{"g", "h"}
		resp := roundTrip[*kmsg.FindCoordinatorResponse](t, vc, req)
		mark(req)
		if v < 4 {
			if resp.ErrorCode != 0 || resp.NodeID != n.NodeID() {
				t.Fatalf("FindCoordinator v%d: error %d node %d", v, resp.ErrorCode, resp.NodeID)
			}
			continue
		}
		if len(resp.Coordinators) != 2 || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[1].NodeID != n.NodeID() {
			t.Fatalf("FindCoordinator v%d: %+v", v, resp.Coordinators)
		}
		if v >= 6 { // share groups (key type 2) are not coordinated here
			req.CoordinatorType = 2
			resp := roundTrip[*kmsg.FindCoordinatorResponse](t, vc, req)
			if resp.Coordinators[0].ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("FindCoordinator v%d for a share group: %+v", v, resp.Coordinators[0])
			}
		}
	}

	// Offsets: a simple commit (no members) at each version, read back at
	// the same version, then the group deleted.
	for _, v := range versionsOf(kmsg.OffsetCommit) {
		group := fmt.Sprintf("commit-%d", v)
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = v, group
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = int64(v) + 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.OffsetCommitResponse](t, vc, req)
		mark(req)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("OffsetCommit v%d: error %d", v, resp.Topics[0].Partitions[0].ErrorCode)
		}
	}
	for _, v := range versionsOf(kmsg.OffsetFetch) {
		group := fmt.Sprintf("commit-%d", v)
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = v
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0}
		if v < 8 {
			req.Group, req.Topics = group, []kmsg.OffsetFetchRequestTopic{rt}
		} else {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = group
			rg.MemberID, rg.MemberEpoch = kmsg.StringPtr("someone"), 3 // v9: ignored for a classic group
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = "orders", []int32{0}
			rg.Topics = append(rg.Topics, gt)
			req.Groups = append(req.Groups, rg)
		}
		resp := roundTrip[*kmsg.OffsetFetchResponse](t, vc, req)
		mark(req)
		var got int64
		var code int16
		if v < 8 {
			got, code = resp.Topics[0].Partitions[0].Offset, resp.Topics[0].Partitions[0].ErrorCode
		} else {
			got, code = resp.Groups[0].Topics[0].Partitions[0].Offset, resp.Groups[0].ErrorCode
		}
		if code != 0 || got != int64(v)+1 {
			t.Fatalf("OffsetFetch v%d: error %d offset %d, want %d", v, code, got, v+1)
		}
	}

	// The classic rebalance at every JoinGroup version, with SyncGroup,
	// Heartbeat and LeaveGroup at the nearest version each has.
	for _, v := range versionsOf(kmsg.JoinGroup) {
		group := fmt.Sprintf("join-%d", v)
		join := kmsg.NewPtrJoinGroupRequest()
		join.Version, join.Group, join.ProtocolType = v, group, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 10000
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name, proto.Metadata = "range", []byte{0, 1}
		join.Protocols = append(join.Protocols, proto)
		jr := roundTrip[*kmsg.JoinGroupResponse](t, vc, join)
		mark(join)
		if v >= 4 {
			if jr.ErrorCode != kerr.MemberIDRequired.Code {
				t.Fatalf("JoinGroup v%d: error %d, want MEMBER_ID_REQUIRED", v, jr.ErrorCode)
			}
			join.MemberID = jr.MemberID
			jr = roundTrip[*kmsg.JoinGroupResponse](t, vc, join)
		}
		if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID {
			t.Fatalf("JoinGroup v%d: error %d leader %q member %q", v, jr.ErrorCode, jr.LeaderID, jr.MemberID)
		}

		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Version = min(v, apis[int16(kmsg.SyncGroup)].versions.Max)
		sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = jr.MemberID, []byte{9, 9}
		sync.GroupAssignment = append(sync.GroupAssignment, a)
		sr := roundTrip[*kmsg.SyncGroupResponse](t, vc, sync)
		mark(sync)
		if sr.ErrorCode != 0 || !bytes.Equal(sr.MemberAssignment, []byte{9, 9}) {
			t.Fatalf("SyncGroup v%d: error %d assignment %v", sync.Version, sr.ErrorCode, sr.MemberAssignment)
		}

		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version = min(v, apis[int16(kmsg.Heartbeat)].versions.Max)
		hb.Group, hb.MemberID, hb.Generation = group, jr.MemberID, jr.Generation
		if hr := roundTrip[*kmsg.HeartbeatResponse](t, vc, hb); hr.ErrorCode != 0 {
			t.Fatalf("Heartbeat v%d: error %d", hb.Version, hr.ErrorCode)
		}
		mark(hb)

		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version = min(v, apis[int16(kmsg.DescribeGroups)].versions.Max)
		dg.Groups = []string{group, "never-existed"}
		dr := roundTrip[*kmsg.DescribeGroupsResponse](t, vc, dg)
		mark(dg)
		if g := dr.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 1 {
			t.Fatalf("DescribeGroups v%d: %+v", dg.Version, g)
		}
		if g := dr.Groups[1]; dg.Version >= 6 && (g.ErrorCode != kerr.GroupIDNotFound.Code || g.ErrorMessage == nil) ||
			dg.Version < 6 && (g.ErrorCode != 0 || g.State != "Dead") {
			t.Fatalf("DescribeGroups v%d of an unknown group: %+v", dg.Version, g)
		}

		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Version = min(v, apis[int16(kmsg.LeaveGroup)].versions.Max)
		leave.Group, leave.MemberID = group, jr.MemberID
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = jr.MemberID
		leave.Members = append(leave.Members, m)
		if lr := roundTrip[*kmsg.LeaveGroupResponse](t, vc, leave); lr.ErrorCode != 0 {
			t.Fatalf("LeaveGroup v%d: error %d", leave.Version, lr.ErrorCode)
		}
		mark(leave)
	}
	// The versions above the join loop's reach.
	for _, key := range []kmsg.Key{kmsg.DescribeGroups} {
		for _, v := range versionsOf(key) {
			if slices.Contains(tested[int16(key)], v) {
				continue
			}
			dg := kmsg.NewPtrDescribeGroupsRequest()
			dg.Version, dg.Groups = v, []string{"join-0"}
			if g := roundTrip[*kmsg.DescribeGroupsResponse](t, vc, dg).Groups[0]; g.ErrorCode != 0 || g.State != "Empty" {
				t.Fatalf("DescribeGroups v%d: %+v", v, g)
			}
			mark(dg)
		}
	}

	for _, v := range versionsOf(kmsg.ListGroups) {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.ListGroupsResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != 0 || len(resp.Groups) == 0 {
			t.Fatalf("ListGroups v%d: error %d, %d groups", v, resp.ErrorCode, len(resp.Groups))
		}
		if v >= 5 { // every group is classic
			req.TypesFilter = []string{"consumer"}
			if resp := roundTrip[*kmsg.ListGroupsResponse](t, vc, req); len(resp.Groups) != 0 {
				t.Fatalf("ListGroups v%d of type consumer: %+v", v, resp.Groups)
			}
		}
	}

	for _, v := range versionsOf(kmsg.DeleteGroups) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{fmt.Sprintf("commit-%d", v), "never-existed"}
		resp := roundTrip[*kmsg.DeleteGroupsResponse](t, vc, req)
		mark(req)
		if resp.Groups[0].ErrorCode != 0 || resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("DeleteGroups v%d: %+v", v, resp.Groups)
		}
	}

	// The admin APIs (their behaviour is tested with real clients in
	// integration/admin_*_test.go; here every version's bytes).
	for i, v := range versionsOf(kmsg.CreatePartitions) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "orders", int32(2+i)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.CreatePartitionsResponse](t, vc, req)
		mark(req)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("CreatePartitions v%d: %+v", v, resp.Topics)
		}
	}
	for _, v := range versionsOf(kmsg.DeleteRecords) {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = v, 10000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.DeleteRecordsResponse](t, vc, req)
		mark(req)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LowWatermark != 0 {
			t.Fatalf("DeleteRecords v%d: %+v", v, p)
		}
	}
	for _, v := range versionsOf(kmsg.AlterConfigs) {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version, req.ValidateOnly = v, true
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("3600000")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp := roundTrip[*kmsg.AlterConfigsResponse](t, vc, req)
		mark(req)
		if resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("AlterConfigs v%d: %+v", v, resp.Resources[0])
		}
	}
	for _, v := range versionsOf(kmsg.IncrementalAlterConfigs) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "orders"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "no.such.config", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1")
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp := roundTrip[*kmsg.IncrementalAlterConfigsResponse](t, vc, req)
		mark(req)
		if resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
			t.Fatalf("IncrementalAlterConfigs v%d of an unknown config: %+v, want INVALID_CONFIG", v, resp.Resources[0])
		}
	}
	for _, v := range versionsOf(kmsg.DescribeCluster) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = v
		if v >= 1 {
			req.EndpointType = 1 // brokers
		}
		resp := roundTrip[*kmsg.DescribeClusterResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != n.NodeID() {
			t.Fatalf("DescribeCluster v%d: error %d, brokers %+v", v, resp.ErrorCode, resp.Brokers)
		}
	}
	for _, v := range versionsOf(kmsg.DescribeProducers) {
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Version = v
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.DescribeProducersResponse](t, vc, req)
		mark(req)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("DescribeProducers v%d: %+v", v, resp.Topics[0].Partitions[0])
		}
	}
	for _, v := range versionsOf(kmsg.DescribeLogDirs) {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v // no topics: every partition
		resp := roundTrip[*kmsg.DescribeLogDirsResponse](t, vc, req)
		mark(req)
		if len(resp.Dirs) != 1 || resp.Dirs[0].ErrorCode != 0 || len(resp.Dirs[0].Topics) == 0 {
			t.Fatalf("DescribeLogDirs v%d: %+v", v, resp.Dirs)
		}
	}
	for _, v := range versionsOf(kmsg.DescribeTopicPartitions) {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Version, req.ResponsePartitionLimit = v, 100
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = "orders"
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.DescribeTopicPartitionsResponse](t, vc, req)
		mark(req)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) < 2 {
			t.Fatalf("DescribeTopicPartitions v%d: %+v", v, resp.Topics)
		}
	}
	for _, v := range versionsOf(kmsg.OffsetDelete) {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Version, req.Group = v, "never-existed"
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.OffsetDeleteResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("OffsetDelete v%d of an unknown group: error %d, want GROUP_ID_NOT_FOUND", v, resp.ErrorCode)
		}
	}

	// KIP-932: a share member joins, the group is described, a session
	// is opened, fetched from, acknowledged on and closed, at every
	// version.
	for _, v := range versionsOf(kmsg.ShareGroupHeartbeat) {
		group, member := fmt.Sprintf("kip932-%d", v), fmt.Sprintf("share-%d", v)
		join := kmsg.NewPtrShareGroupHeartbeatRequest()
		join.Version, join.GroupID, join.MemberID, join.SubscribedTopicNames = v, group, member, []string{"orders"}
		jr := roundTrip[*kmsg.ShareGroupHeartbeatResponse](t, vc, join)
		mark(join)
		if jr.ErrorCode != 0 || jr.MemberEpoch < 1 || jr.Assignment == nil || len(jr.Assignment.TopicPartitions) != 1 {
			t.Fatalf("ShareGroupHeartbeat v%d join: %+v", v, jr)
		}
		topicID := jr.Assignment.TopicPartitions[0].TopicID
		for _, dv := range versionsOf(kmsg.ShareGroupDescribe) {
			d := kmsg.NewPtrShareGroupDescribeRequest()
			d.Version, d.GroupIDs = dv, []string{group, "never-existed"}
			dr := roundTrip[*kmsg.ShareGroupDescribeResponse](t, vc, d)
			mark(d)
			if g := dr.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 1 {
				t.Fatalf("ShareGroupDescribe v%d: %+v", dv, g)
			}
			if g := dr.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("ShareGroupDescribe v%d of an unknown group: %+v", dv, g)
			}
		}
		for _, fv := range versionsOf(kmsg.ShareFetch) {
			sess := fmt.Sprintf("%s-f%d", member, fv)
			f := kmsg.NewPtrShareFetchRequest()
			f.Version, f.GroupID, f.MemberID, f.MaxBytes, f.MaxRecords = fv, kmsg.StringPtr(group), kmsg.StringPtr(sess), 1<<20, 10
			ft := kmsg.NewShareFetchRequestTopic()
			ft.TopicID = topicID
			ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			f.Topics = append(f.Topics, ft)
			fr := roundTrip[*kmsg.ShareFetchResponse](t, vc, f)
			mark(f)
			if fr.ErrorCode != 0 || fr.AcquisitionLockTimeoutMillis != 30000 {
				t.Fatalf("ShareFetch v%d: %+v", fv, fr)
			}
			av := min(fv, apis[int16(kmsg.ShareAcknowledge)].versions.Max)
			a := kmsg.NewPtrShareAcknowledgeRequest()
			a.Version, a.GroupID, a.MemberID, a.ShareSessionEpoch = av, kmsg.StringPtr(group), kmsg.StringPtr(sess), 1
			if ar := roundTrip[*kmsg.ShareAcknowledgeResponse](t, vc, a); ar.ErrorCode != 0 {
				t.Fatalf("ShareAcknowledge v%d: %+v", av, ar)
			}
			mark(a)
			a2 := kmsg.NewPtrShareAcknowledgeRequest()
			a2.Version, a2.GroupID, a2.MemberID, a2.ShareSessionEpoch = av, kmsg.StringPtr(group), kmsg.StringPtr(sess), 1
			if ar := roundTrip[*kmsg.ShareAcknowledgeResponse](t, vc, a2); ar.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
				t.Fatalf("ShareAcknowledge v%d of a spent epoch: %+v", av, ar)
			}
			closeReq := kmsg.NewPtrShareFetchRequest()
			closeReq.Version, closeReq.GroupID, closeReq.MemberID, closeReq.ShareSessionEpoch = fv, kmsg.StringPtr(group), kmsg.StringPtr(sess), -1
			if cr := roundTrip[*kmsg.ShareFetchResponse](t, vc, closeReq); cr.ErrorCode != 0 {
				t.Fatalf("ShareFetch v%d close: %+v", fv, cr)
			}
		}
		leave := kmsg.NewPtrShareGroupHeartbeatRequest()
		leave.Version, leave.GroupID, leave.MemberID, leave.MemberEpoch = v, group, member, -1
		if lr := roundTrip[*kmsg.ShareGroupHeartbeatResponse](t, vc, leave); lr.ErrorCode != 0 || lr.MemberEpoch != -1 {
			t.Fatalf("ShareGroupHeartbeat v%d leave: %+v", v, lr)
		}
	}
	// The share offsets admin APIs on an empty share group.
	{
		const group = "kip932-offsets"
		for _, v := range versionsOf(kmsg.AlterShareGroupOffsets) {
			a := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			a.Version, a.GroupID = v, group
			at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
			at.Topic = "orders"
			ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			at.Partitions = append(at.Partitions, ap)
			a.Topics = append(a.Topics, at)
			ar := roundTrip[*kmsg.AlterShareGroupOffsetsResponse](t, vc, a)
			mark(a)
			if ar.ErrorCode != 0 || len(ar.Topics) != 1 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("AlterShareGroupOffsets v%d: %+v", v, ar)
			}
		}
		for _, v := range versionsOf(kmsg.DescribeShareGroupOffsets) {
			d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			d.Version = v
			dg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			dg.GroupID = group
			d.Groups = append(d.Groups, dg)
			dr := roundTrip[*kmsg.DescribeShareGroupOffsetsResponse](t, vc, d)
			mark(d)
			if g := dr.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != 0 {
				t.Fatalf("DescribeShareGroupOffsets v%d: %+v", v, dr.Groups)
			}
		}
		for _, v := range versionsOf(kmsg.DeleteShareGroupOffsets) {
			d := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			d.Version, d.GroupID = v, group
			dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
			dt.Topic = "orders"
			d.Topics = append(d.Topics, dt)
			dr := roundTrip[*kmsg.DeleteShareGroupOffsetsResponse](t, vc, d)
			mark(d)
			if dr.ErrorCode != 0 || len(dr.Topics) != 1 || dr.Topics[0].ErrorCode != 0 {
				t.Fatalf("DeleteShareGroupOffsets v%d: %+v", v, dr)
			}
		}
	}

	// KIP-848: a member joins, heartbeats with what it owns, the group is
	// described, and the member leaves, at every version.
	for _, v := range versionsOf(kmsg.ConsumerGroupHeartbeat) {
		group, member := fmt.Sprintf("kip848-%d", v), fmt.Sprintf("member-%d", v)
		join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		join.Version, join.Group, join.MemberID = v, group, member
		join.RebalanceTimeoutMillis, join.SubscribedTopicNames, join.ServerAssignor = 30000, []string{"orders"}, kmsg.StringPtr("range")
		jr := roundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, vc, join)
		mark(join)
		if jr.ErrorCode != 0 || jr.MemberEpoch < 1 || jr.Assignment == nil || len(jr.Assignment.Topics) != 1 || len(jr.Assignment.Topics[0].Partitions) < 2 {
			t.Fatalf("ConsumerGroupHeartbeat v%d join: %+v", v, jr)
		}
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = v, group, member, jr.MemberEpoch
		owned := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		owned.TopicID, owned.Partitions = jr.Assignment.Topics[0].TopicID, jr.Assignment.Topics[0].Partitions
		hb.Topics = append(hb.Topics, owned)
		if hr := roundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, vc, hb); hr.ErrorCode != 0 || hr.MemberEpoch != jr.MemberEpoch {
			t.Fatalf("ConsumerGroupHeartbeat v%d: %+v", v, hr)
		}
		for _, dv := range versionsOf(kmsg.ConsumerGroupDescribe) {
			d := kmsg.NewPtrConsumerGroupDescribeRequest()
			d.Version, d.Groups, d.IncludeAuthorizedOperations = dv, []string{group, "never-existed"}, true
			dr := roundTrip[*kmsg.ConsumerGroupDescribeResponse](t, vc, d)
			mark(d)
			if g := dr.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || g.AssignorName != "range" || len(g.Members) != 1 ||
				g.Members[0].MemberEpoch != jr.MemberEpoch || len(g.Members[0].Assignment.TopicPartitions) != 1 {
				t.Fatalf("ConsumerGroupDescribe v%d: %+v", dv, g)
			}
			if g := dr.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("ConsumerGroupDescribe v%d of an unknown group: %+v", dv, g)
			}
		}
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = v, group, member, -1
		if lr := roundTrip[*kmsg.ConsumerGroupHeartbeatResponse](t, vc, leave); lr.ErrorCode != 0 || lr.MemberEpoch != -1 {
			t.Fatalf("ConsumerGroupHeartbeat v%d leave: %+v", v, lr)
		}
	}

	// SASL on this PLAINTEXT listener: ILLEGAL_SASL_STATE, then the
	// connection closes (so each on a connection of its own). The SASL
	// exchanges themselves are security_test.go's.
	for _, v := range versionsOf(kmsg.SASLHandshake) {
		sc := dialVersions(t, n.KafkaAddr())
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Version, req.Mechanism = v, "SCRAM-SHA-256"
		if resp := roundTrip[*kmsg.SASLHandshakeResponse](t, sc, req); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("SaslHandshake v%d on a PLAINTEXT listener: %+v", v, resp)
		}
		mark(req)
	}
	for _, v := range versionsOf(kmsg.SASLAuthenticate) {
		sc := dialVersions(t, n.KafkaAddr())
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = v
		if resp := roundTrip[*kmsg.SASLAuthenticateResponse](t, sc, req); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("SaslAuthenticate v%d on a PLAINTEXT listener: %+v", v, resp)
		}
		mark(req)
		if _, err := sc.exchange(kmsg.NewPtrMetadataRequest()); err == nil {
			t.Fatalf("connection still served after SaslAuthenticate v%d's error", v)
		}
	}

	// SCRAM users: one made, then described.
	for _, v := range versionsOf(kmsg.AlterUserSCRAMCredentials) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Version = v
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "versions", 1, 4096, []byte("salt"), []byte("salted")
		req.Upsertions = append(req.Upsertions, up)
		resp := roundTrip[*kmsg.AlterUserSCRAMCredentialsResponse](t, vc, req)
		mark(req)
		if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("AlterUserScramCredentials v%d: %+v", v, resp)
		}
	}
	for _, v := range versionsOf(kmsg.DescribeUserSCRAMCredentials) {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.DescribeUserSCRAMCredentialsResponse](t, vc, req)
		mark(req)
		if len(resp.Results) != 1 || resp.Results[0].User != "versions" || len(resp.Results[0].CredentialInfos) != 1 {
			t.Fatalf("DescribeUserScramCredentials v%d: %+v", v, resp)
		}
	}

	// Client quotas: one set per version, each described.
	for _, v := range versionsOf(kmsg.AlterClientQuotas) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version = v
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = "client-id", kmsg.StringPtr(fmt.Sprintf("quota-v%d", v))
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1024
		e.Entity, e.Ops = append(e.Entity, ec), append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		resp := roundTrip[*kmsg.AlterClientQuotasResponse](t, vc, req)
		mark(req)
		if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
			t.Fatalf("AlterClientQuotas v%d: %+v", v, resp)
		}
	}
	for _, v := range versionsOf(kmsg.DescribeClientQuotas) {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = v
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "client-id", kmsg.QuotasMatchTypeExact, kmsg.StringPtr(fmt.Sprintf("quota-v%d", v))
		req.Components = append(req.Components, c)
		retry.Run(t, 10*time.Second, func() error {
			resp := roundTrip[*kmsg.DescribeClientQuotasResponse](t, vc, req)
			if resp.ErrorCode != 0 || len(resp.Entries) != 1 || len(resp.Entries[0].Values) != 1 || resp.Entries[0].Values[0].Value != 1024 {
				return fmt.Errorf("DescribeClientQuotas v%d: %+v", v, resp)
			}
			return nil
		})
		mark(req)
	}

	// ACLs: one made per version, each described, then all deleted. A
	// literal pattern (what v0 can say) for a principal no request uses.
	for _, v := range versionsOf(kmsg.CreateACLs) {
		req := kmsg.NewPtrCreateACLsRequest()
		req.Version = v
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, fmt.Sprintf("acl-v%d", v), kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:versions", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		resp := roundTrip[*kmsg.CreateACLsResponse](t, vc, req)
		mark(req)
		if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("CreateAcls v%d: %+v", v, resp)
		}
	}
	for _, v := range versionsOf(kmsg.DescribeACLs) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version = v
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		var resp *kmsg.DescribeACLsResponse
		retry.Run(t, 5*time.Second, func() error { // the catalog applies creations as it saves them
			resp = roundTrip[*kmsg.DescribeACLsResponse](t, vc, req)
			if resp.ErrorCode != 0 || len(resp.Resources) != len(versionsOf(kmsg.CreateACLs)) {
				return fmt.Errorf("DescribeAcls v%d: %+v", v, resp)
			}
			return nil
		})
		mark(req)
	}
	deleted := 0
	for _, v := range versionsOf(kmsg.DeleteACLs) {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		name := fmt.Sprintf("acl-v%d", v)
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeLiteral
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		resp := roundTrip[*kmsg.DeleteACLsResponse](t, vc, req)
		mark(req)
		if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("DeleteAcls v%d: %+v", v, resp)
		}
		deleted += len(resp.Results[0].MatchingACLs)
	}
	if deleted != len(versionsOf(kmsg.CreateACLs)) {
		t.Fatalf("DeleteAcls deleted %d bindings, want %d", deleted, len(versionsOf(kmsg.CreateACLs)))
	}

	// Transactions: one per version of the transaction APIs (AddPartitionsToTxn
	// v4 is the brokers' batched form), each committed; then described and
	// listed at every version.
	txnVersions := versionsOf(kmsg.EndTxn)
	for _, key := range []kmsg.Key{kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.TxnOffsetCommit} {
		if !slices.Equal(versionsOf(key), txnVersions) {
			t.Fatalf("%s's versions %v differ from EndTxn's %v: give it its own loop", kmsg.NameForKey(int16(key)), versionsOf(key), txnVersions)
		}
	}
	var txnIDs []string
	for _, v := range txnVersions {
		id := fmt.Sprintf("versions-txn-%d", v)
		txnIDs = append(txnIDs, id)
		ipid := kmsg.NewPtrInitProducerIDRequest()
		ipid.Version, ipid.TransactionalID, ipid.TransactionTimeoutMillis = 4, &id, 60000
		var pid int64
		var epoch int16
		retry.Run(t, 20*time.Second, func() error { // the first loads __transaction_state
			resp := roundTrip[*kmsg.InitProducerIDResponse](t, vc, ipid)
			if resp.ErrorCode != 0 {
				return fmt.Errorf("InitProducerID for %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
			}
			pid, epoch = resp.ProducerID, resp.ProducerEpoch
			return nil
		})

		apt := kmsg.NewPtrAddPartitionsToTxnRequest()
		apt.Version = v
		if v < 4 {
			apt.TransactionalID, apt.ProducerID, apt.ProducerEpoch = id, pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "orders", []int32{0}
			apt.Topics = append(apt.Topics, rt)
		} else {
			tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch = id, pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic, rt.Partitions = "orders", []int32{0}
			tr.Topics = append(tr.Topics, rt)
			apt.Transactions = append(apt.Transactions, tr)
		}
		aptResp := roundTrip[*kmsg.AddPartitionsToTxnResponse](t, vc, apt)
		mark(apt)
		code := aptResp.ErrorCode
		if v < 4 && len(aptResp.Topics) == 1 && len(aptResp.Topics[0].Partitions) == 1 {
			code = aptResp.Topics[0].Partitions[0].ErrorCode
		} else if v >= 4 && len(aptResp.Transactions) == 1 && len(aptResp.Transactions[0].Topics) == 1 {
			code = aptResp.Transactions[0].Topics[0].Partitions[0].ErrorCode
		} else {
			t.Fatalf("AddPartitionsToTxn v%d: %+v", v, aptResp)
		}
		if code != 0 {
			t.Fatalf("AddPartitionsToTxn v%d: %v", v, kerr.ErrorForCode(code))
		}

		aot := kmsg.NewPtrAddOffsetsToTxnRequest()
		aot.Version, aot.TransactionalID, aot.ProducerID, aot.ProducerEpoch, aot.Group = v, id, pid, epoch, "versions-txn"
		if resp := roundTrip[*kmsg.AddOffsetsToTxnResponse](t, vc, aot); resp.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		mark(aot)

		toc := kmsg.NewPtrTxnOffsetCommitRequest()
		toc.Version, toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch = v, id, "versions-txn", pid, epoch
		toc.Generation = -1
		tt := kmsg.NewTxnOffsetCommitRequestTopic()
		tt.Topic = "orders"
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Offset, tp.LeaderEpoch = 1, -1
		tt.Partitions = append(tt.Partitions, tp)
		toc.Topics = append(toc.Topics, tt)
		tocResp := roundTrip[*kmsg.TxnOffsetCommitResponse](t, vc, toc)
		mark(toc)
		if len(tocResp.Topics) != 1 || len(tocResp.Topics[0].Partitions) != 1 || tocResp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("TxnOffsetCommit v%d: %+v", v, tocResp)
		}

		et := kmsg.NewPtrEndTxnRequest()
		et.Version, et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = v, id, pid, epoch, true
		if resp := roundTrip[*kmsg.EndTxnResponse](t, vc, et); resp.ErrorCode != 0 {
			t.Fatalf("EndTxn v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		mark(et)
	}
	for _, v := range versionsOf(kmsg.DescribeTransactions) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.Version, req.TransactionalIDs = v, txnIDs
		resp := roundTrip[*kmsg.DescribeTransactionsResponse](t, vc, req)
		mark(req)
		if len(resp.TransactionStates) != len(txnIDs) {
			t.Fatalf("DescribeTransactions v%d: %+v", v, resp)
		}
		for _, st := range resp.TransactionStates {
			if st.ErrorCode != 0 || (st.State != "CompleteCommit" && st.State != "PrepareCommit") {
				t.Fatalf("DescribeTransactions v%d: %s is %q, error %d", v, st.TransactionalID, st.State, st.ErrorCode)
			}
		}
	}
	for _, v := range versionsOf(kmsg.ListTransactions) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.ListTransactionsResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != 0 || len(resp.TransactionStates) != len(txnIDs) {
			t.Fatalf("ListTransactions v%d: %+v", v, resp)
		}
	}

	// Reassignment on a single copy: its own list is a no-op, a cancel
	// finds no move, nothing is listed, and its leader is the preferred.
	for _, v := range versionsOf(kmsg.AlterPartitionAssignments) {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version = v
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = []int32{n.NodeID()}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.AlterPartitionAssignmentsResponse](t, vc, req)
		mark(req)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("AlterPartitionReassignments v%d: %+v", v, resp.Topics)
		}
		req.Topics[0].Partitions[0].Replicas = nil
		resp = roundTrip[*kmsg.AlterPartitionAssignmentsResponse](t, vc, req)
		if resp.Topics[0].Partitions[0].ErrorCode != kerr.NoReassignmentInProgress.Code {
			t.Fatalf("AlterPartitionReassignments v%d cancel: %+v", v, resp.Topics)
		}
	}
	for _, v := range versionsOf(kmsg.ListPartitionReassignments) {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.Version = v
		resp := roundTrip[*kmsg.ListPartitionReassignmentsResponse](t, vc, req)
		mark(req)
		if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
			t.Fatalf("ListPartitionReassignments v%d: %+v", v, resp)
		}
	}
	for _, v := range versionsOf(kmsg.ElectLeaders) {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.TimeoutMillis = v, 1000
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "orders", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := roundTrip[*kmsg.ElectLeadersResponse](t, vc, req)
		mark(req)
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
			t.Fatalf("ElectLeaders v%d: %+v", v, resp.Topics)
		}
	}

	// Every advertised key and version was sent.
	for key, a := range apis {
		for v := a.versions.Min; v <= a.versions.Max; v++ {
			if !slices.Contains(tested[key], v) {
				t.Errorf("%s v%d is advertised but this test never sent it", kmsg.NameForKey(key), v)
			}
		}
	}
}

// checkAdvertised: ApiVersions lists exactly the API table, sorted, and
// every key in it but ApiVersions has a handler.
func checkAdvertised(t testing.TB, what string, resp *kmsg.ApiVersionsResponse) {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("%s: error %d", what, resp.ErrorCode)
	}
	got := map[int16]wire.VersionRange{}
	for _, k := range resp.ApiKeys {
		got[k.ApiKey] = wire.VersionRange{Min: k.MinVersion, Max: k.MaxVersion}
	}
	for key, a := range apis {
		if got[key] != a.versions {
			t.Errorf("%s: %s advertised %v, the table says %v", what, kmsg.NameForKey(key), got[key], a.versions)
		}
		if a.handle == nil && key != int16(kmsg.ApiVersions) {
			t.Errorf("%s: %s is in the table without a handler", what, kmsg.NameForKey(key))
		}
		if max := kmsg.RequestForKey(key).MaxVersion(); a.versions.Max > max {
			t.Errorf("%s: %s advertised up to v%d, beyond kmsg's v%d", what, kmsg.NameForKey(key), a.versions.Max, max)
		}
	}
	if len(got) != len(apis) {
		t.Errorf("%s: %d keys advertised, the table has %d", what, len(got), len(apis))
	}
}

// TestUnadvertisedIsNotServed: every request kmsg knows that the table does
// not hold (another key, or a version past either end of a range) closes
// the connection, as Kafka does for an API it does not speak; nothing is
// handled that ApiVersions does not advertise.
func TestUnadvertisedIsNotServed(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	var keys []int16
	for k := int16(0); k < 200; k++ {
		if kmsg.RequestForKey(k) != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	refused := 0
	for _, key := range keys {
		req := kmsg.RequestForKey(key)
		var versions []int16
		if a, ok := apis[key]; ok {
			if key == int16(kmsg.ApiVersions) {
				continue // answered with UNSUPPORTED_VERSION instead (KIP-511)
			}
			if a.versions.Min > 0 {
				versions = append(versions, a.versions.Min-1)
			}
			if a.versions.Max < req.MaxVersion() {
				versions = append(versions, a.versions.Max+1)
			}
		} else {
			versions = []int16{0, req.MaxVersion()}
		}
		for _, v := range versions {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			vc := dialVersions(t, n.KafkaAddr())
			if body, err := vc.exchange(req); err == nil {
				t.Errorf("%s v%d is not advertised, yet got a %d-byte answer", kmsg.NameForKey(key), v, len(body))
			}
			vc.c.Close()
			refused++
		}
	}
	if refused < 50 {
		t.Fatalf("only %d unadvertised requests tried", refused)
	}
	// And the connection-level check: ApiVersions is the table.
	vc := dialVersions(t, n.KafkaAddr())
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "versions-test", "1.0"
	checkAdvertised(t, "ApiVersions", roundTrip[*kmsg.ApiVersionsResponse](t, vc, req))
}

// TestKafka41Versions: each key's range is Kafka 4.1's (the maxima of
// Apache Kafka 4.1.0's ApiVersions for the keys Spool serves; kmsg already
// knows 4.2's later versions, which are not offered).
func TestKafka41Versions(t *testing.T) {
	want := map[kmsg.Key]wire.VersionRange{
		kmsg.Produce: {Min: 0, Max: 12}, kmsg.Fetch: {Min: 4, Max: 17},
		kmsg.ListOffsets: {Min: 1, Max: 10}, kmsg.Metadata: {Min: 1, Max: 13},
		kmsg.OffsetCommit: {Min: 0, Max: 9}, kmsg.OffsetFetch: {Min: 0, Max: 9},
		kmsg.FindCoordinator: {Min: 0, Max: 6}, kmsg.JoinGroup: {Min: 0, Max: 9},
		kmsg.Heartbeat: {Min: 0, Max: 4}, kmsg.LeaveGroup: {Min: 0, Max: 5},
		kmsg.SyncGroup: {Min: 0, Max: 5}, kmsg.DescribeGroups: {Min: 0, Max: 6},
		kmsg.ListGroups: {Min: 0, Max: 5}, kmsg.ApiVersions: {Min: 0, Max: 4},
		kmsg.CreateTopics: {Min: 2, Max: 7}, kmsg.DeleteTopics: {Min: 1, Max: 6},
		kmsg.InitProducerID: {Min: 0, Max: 5}, kmsg.DescribeConfigs: {Min: 1, Max: 4},
		kmsg.DeleteGroups:                 {Min: 0, Max: 2},
		kmsg.DescribeUserSCRAMCredentials: {Min: 0, Max: 0}, kmsg.AlterUserSCRAMCredentials: {Min: 0, Max: 0},
		kmsg.DescribeClientQuotas: {Min: 0, Max: 1}, kmsg.AlterClientQuotas: {Min: 0, Max: 1},
		kmsg.CreateACLs: {Min: 2, Max: 3}, kmsg.DescribeACLs: {Min: 2, Max: 3}, kmsg.DeleteACLs: {Min: 2, Max: 3},
		// Not the transaction APIs: Spool offers transactions v1 only, so
		// AddPartitionsToTxn, EndTxn and TxnOffsetCommit stop at v4, below
		// Kafka 4.1's v5 (KIP-890 part 2); node/26_end_txn.go says why.
		kmsg.ConsumerGroupHeartbeat: {Min: 0, Max: 1}, kmsg.ConsumerGroupDescribe: {Min: 0, Max: 1},
		kmsg.ElectLeaders: {Min: 0, Max: 2}, kmsg.AlterPartitionAssignments: {Min: 0, Max: 1},
		kmsg.ListPartitionReassignments: {Min: 0, Max: 0},
	}
	for key, rng := range want {
		a, ok := apis[int16(key)]
		if !ok {
			t.Errorf("%s is not served", kmsg.NameForKey(int16(key)))
			continue
		}
		if a.versions.Max != rng.Max {
			t.Errorf("%s: up to v%d, Kafka 4.1 serves v%d", kmsg.NameForKey(int16(key)), a.versions.Max, rng.Max)
		}
	}
}
