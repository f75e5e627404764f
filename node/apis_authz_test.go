package node

// Every handler of the API table asks the authorizer, and acts on its
// answer: with allow-everyone off and one ACL in the cluster (which closes
// every resource no ACL allows), each API is sent a request
// naming a topic, a group or a transactional id, and must both ask (the
// node's authorization hook sees its key) and refuse (the response carries
// Kafka's *_AUTHORIZATION_FAILED). A new row in apis without a request
// here fails the test, so no API is forgotten.

import (
	"reflect"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzExempt are the APIs every client may send before or without an
// identity, as in Kafka.
var authzExempt = map[int16]string{
	int16(kmsg.ApiVersions):      "answered by wire before anything else",
	int16(kmsg.SASLHandshake):    "authentication itself",
	int16(kmsg.SASLAuthenticate): "authentication itself",
}

// authzProbes builds, per API key, a request the authorizer must refuse.
func authzProbes() map[int16]kmsg.Request {
	const topic, grp = "t", "g"
	p := map[int16]kmsg.Request{}
	add := func(r kmsg.Request) { p[r.Key()] = r }

	produce := kmsg.NewPtrProduceRequest()
	produce.Acks = 1
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{kmsg.NewProduceRequestTopicPartition()}
	produce.Topics = []kmsg.ProduceRequestTopic{pt}
	add(produce)

	fetch := kmsg.NewPtrFetchRequest()
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	fetch.Version = 12 // by name
	add(fetch)

	lo := kmsg.NewPtrListOffsetsRequest()
	lot := kmsg.NewListOffsetsRequestTopic()
	lot.Topic = topic
	lot.Partitions = []kmsg.ListOffsetsRequestTopicPartition{kmsg.NewListOffsetsRequestTopicPartition()}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lot}
	add(lo)

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = []kmsg.MetadataRequestTopic{mt}
	add(md)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = topic, 1, 1
	ct.Topics = []kmsg.CreateTopicsRequestTopic{ctt}
	add(ct)

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr(topic)
	dt.Topics, dt.TopicNames = []kmsg.DeleteTopicsRequestTopic{dtt}, []string{topic}
	add(dt)

	ipid := kmsg.NewPtrInitProducerIDRequest()
	add(ipid)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dcr := kmsg.NewDescribeConfigsRequestResource()
	dcr.ResourceType, dcr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dc.Resources = []kmsg.DescribeConfigsRequestResource{dcr}
	add(dc)

	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	oft := kmsg.NewOffsetForLeaderEpochRequestTopic()
	oft.Topic = topic
	oft.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{kmsg.NewOffsetForLeaderEpochRequestTopicPartition()}
	ofle.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{oft}
	add(ofle)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group = grp
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = topic
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
	oc.Topics = []kmsg.OffsetCommitRequestTopic{oct}
	add(oc)

	of := kmsg.NewPtrOffsetFetchRequest()
	ofg := kmsg.NewOffsetFetchRequestGroup()
	ofg.Group = grp
	of.Group, of.Groups = grp, []kmsg.OffsetFetchRequestGroup{ofg}
	add(of)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = grp, []string{grp}
	add(fc)

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = grp, "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	add(jg)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = grp
	add(hb)
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group = grp
	add(lg)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group = grp
	add(sg)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{grp}
	add(dg)
	add(kmsg.NewPtrListGroupsRequest())
	delg := kmsg.NewPtrDeleteGroupsRequest()
	delg.Groups = []string{grp}
	add(delg)
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberEpoch = grp, 0
	add(cgh)
	cgd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cgd.Groups = []string{grp}
	add(cgd)
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.SubscribedTopicNames = grp, "share-member", []string{topic}
	add(sgh)
	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.GroupIDs = []string{grp}
	add(sgd)
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID, sf.MaxBytes, sf.MaxRecords = kmsg.StringPtr(grp), kmsg.StringPtr("share-member"), 1<<20, 10
	add(sf)
	dsgo := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dsgoGroup := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	dsgoGroup.GroupID = grp
	dsgo.Groups = append(dsgo.Groups, dsgoGroup)
	add(dsgo)
	asgo := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	asgo.GroupID = grp
	add(asgo)
	delsgo := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	delsgo.GroupID = grp
	add(delsgo)
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = kmsg.StringPtr(grp), kmsg.StringPtr("share-member"), 1
	add(sa)

	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = topic
	drt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{kmsg.NewDeleteRecordsRequestTopicPartition()}
	dr.Topics = []kmsg.DeleteRecordsRequestTopic{drt}
	add(dr)

	ac := kmsg.NewPtrAlterConfigsRequest()
	acr := kmsg.NewAlterConfigsRequestResource()
	acr.ResourceType, acr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	ac.Resources = []kmsg.AlterConfigsRequestResource{acr}
	add(ac)
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iacr := kmsg.NewIncrementalAlterConfigsRequestResource()
	iacr.ResourceType, iacr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	iac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{iacr}
	add(iac)

	add(kmsg.NewPtrDescribeLogDirsRequest())

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = topic, 2
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{cpt}
	add(cp)

	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = grp
	add(od)

	dcl := kmsg.NewPtrDescribeClusterRequest()
	dcl.IncludeClusterAuthorizedOperations = true
	add(dcl)

	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = topic, []int32{0}
	dp.Topics = []kmsg.DescribeProducersRequestTopic{dpt}
	add(dp)

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtpt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	dtpt.Topic = topic
	dtp.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{dtpt}
	add(dtp)

	da := kmsg.NewPtrDescribeACLsRequest()
	da.ResourceType, da.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	da.Operation, da.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	add(da)
	ca := kmsg.NewPtrCreateACLsRequest()
	cac := kmsg.NewCreateACLsRequestCreation()
	cac.ResourceType, cac.ResourceName, cac.Principal, cac.Host = kmsg.ACLResourceTypeTopic, topic, "User:x", "*"
	cac.Operation, cac.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	ca.Creations = []kmsg.CreateACLsRequestCreation{cac}
	add(ca)
	dla := kmsg.NewPtrDeleteACLsRequest()
	dlaf := kmsg.NewDeleteACLsRequestFilter()
	dlaf.ResourceType, dlaf.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dlaf.Operation, dlaf.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dla.Filters = []kmsg.DeleteACLsRequestFilter{dlaf}
	add(dla)

	add(kmsg.NewPtrDescribeUserSCRAMCredentialsRequest())
	aus := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	ausu := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	ausu.Name, ausu.Mechanism, ausu.Iterations, ausu.Salt, ausu.SaltedPassword = "u", 2, 8192, []byte("salt"), []byte("salted")
	aus.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{ausu}
	add(aus)
	add(kmsg.NewPtrDescribeClientQuotasRequest())
	acq := kmsg.NewPtrAlterClientQuotasRequest()
	acqe := kmsg.NewAlterClientQuotasRequestEntry()
	acqc := kmsg.NewAlterClientQuotasRequestEntryEntity()
	acqc.Type, acqc.Name = "user", kmsg.StringPtr("u")
	acqo := kmsg.NewAlterClientQuotasRequestEntryOp()
	acqo.Key, acqo.Value = "producer_byte_rate", 1024
	acqe.Entity, acqe.Ops = []kmsg.AlterClientQuotasRequestEntryEntity{acqc}, []kmsg.AlterClientQuotasRequestEntryOp{acqo}
	acq.Entries = []kmsg.AlterClientQuotasRequestEntry{acqe}
	add(acq)
	const txnID = "x"
	apt := kmsg.NewPtrAddPartitionsToTxnRequest()
	apt.TransactionalID = txnID
	aptt := kmsg.NewAddPartitionsToTxnRequestTopic()
	aptt.Topic, aptt.Partitions = topic, []int32{0}
	apt.Topics = []kmsg.AddPartitionsToTxnRequestTopic{aptt}
	add(apt) // sent at v4, the brokers' batch: CLUSTER_ACTION

	aot := kmsg.NewPtrAddOffsetsToTxnRequest()
	aot.TransactionalID, aot.Group = txnID, grp
	add(aot)

	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID = txnID
	add(et)

	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group = txnID, grp
	toct := kmsg.NewTxnOffsetCommitRequestTopic()
	toct.Topic = topic
	toct.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{kmsg.NewTxnOffsetCommitRequestTopicPartition()}
	toc.Topics = []kmsg.TxnOffsetCommitRequestTopic{toct}
	add(toc)

	dtx := kmsg.NewPtrDescribeTransactionsRequest()
	dtx.TransactionalIDs = []string{txnID}
	add(dtx)

	add(kmsg.NewPtrListTransactionsRequest())

	apr := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	aprt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	aprt.Topic = topic
	aprp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	aprp.Replicas = []int32{1}
	aprt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{aprp}
	apr.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{aprt}
	add(apr)

	add(kmsg.NewPtrListPartitionReassignmentsRequest())

	el := kmsg.NewPtrElectLeadersRequest()
	elt := kmsg.NewElectLeadersRequestTopic()
	elt.Topic, elt.Partitions = topic, []int32{0}
	el.Topics = []kmsg.ElectLeadersRequestTopic{elt}
	add(el)

	return p
}

// refusedAnswers are the APIs whose refusal Kafka expresses without an
// error code: a shorter answer.
var refusedAnswers = map[int16]func(kmsg.Response) bool{
	int16(kmsg.DescribeCluster): func(r kmsg.Response) bool {
		return r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations == 0
	},
	int16(kmsg.ListGroups): func(r kmsg.Response) bool { return len(r.(*kmsg.ListGroupsResponse).Groups) == 0 },
	int16(kmsg.ListTransactions): func(r kmsg.Response) bool {
		return len(r.(*kmsg.ListTransactionsResponse).TransactionStates) == 0
	},
	int16(kmsg.DescribeLogDirs): func(r kmsg.Response) bool {
		return len(r.(*kmsg.DescribeLogDirsResponse).Dirs) == 0
	},
}

// hasAuthzError reports whether any ErrorCode (or ConfigErrorCode) field
// anywhere in v is an authorization failure.
func hasAuthzError(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasAuthzError(v.Elem())
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if hasAuthzError(v.Index(i)) {
				return true
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f, name := v.Field(i), v.Type().Field(i).Name
			if f.Kind() == reflect.Int16 && (name == "ErrorCode" || name == "ConfigErrorCode") {
				switch f.Int() {
				case int64(kerr.TopicAuthorizationFailed.Code), int64(kerr.GroupAuthorizationFailed.Code),
					int64(kerr.ClusterAuthorizationFailed.Code), int64(kerr.TransactionalIDAuthorizationFailed.Code):
					return true
				}
			} else if hasAuthzError(f) {
				return true
			}
		}
	}
	return false
}

func TestEveryAPIAsksTheAuthorizer(t *testing.T) {
	var mu sync.Mutex
	asked := map[int16]int{}
	cfg := testConfig(t, t.TempDir())
	cfg.AllowEveryoneIfNoACL = false
	cfg.authzHook = func(key int16, _ kmsg.ACLOperation, _ kmsg.ACLResourceType, _ string) {
		mu.Lock()
		asked[key]++
		mu.Unlock()
	}
	n := startNode(t, cfg)
	cl := newClient(t, n)
	// One ACL for somebody else: a cluster with none is open to all.
	if created, err := kadm.NewClient(cl).CreateACLs(testCtx(t), kadm.NewACLs().Allow("User:somebody-else").
		Topics("unrelated").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || created[0].Err != nil {
		t.Fatalf("create the one ACL: %v %+v", err, created)
	}
	broker := cl.SeedBrokers()[0]
	probes := authzProbes()
	for key, a := range apis {
		if _, ok := authzExempt[key]; ok {
			continue
		}
		req, ok := probes[key]
		if !ok {
			t.Errorf("API %s (%d) has no authorization probe: add one to authzProbes", kmsg.NameForKey(key), key)
			continue
		}
		req.SetVersion(a.versions.Max)
		if key == int16(kmsg.Fetch) {
			req.SetVersion(12)
		}
		resp, err := broker.Request(testCtx(t), req)
		if err != nil {
			t.Errorf("%s: %v", kmsg.NameForKey(key), err)
			continue
		}
		mu.Lock()
		n := asked[key]
		mu.Unlock()
		if n == 0 {
			t.Errorf("%s did not ask the authorizer", kmsg.NameForKey(key))
		}
		refused := hasAuthzError(reflect.ValueOf(resp))
		if check, ok := refusedAnswers[key]; ok {
			refused = check(resp)
		}
		if !refused {
			t.Errorf("%s was not refused: %+v", kmsg.NameForKey(key), resp)
		}
	}
}
