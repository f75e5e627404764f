package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/coord"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/wire"
)

// FindCoordinator: v0-6
//
// Behavior:
// * Authorization: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED;
//   on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// * A group's coordinator is the leader of __consumer_offsets partition
//   abs(javaHashCode(group)) % partitions, as in Kafka, so any node answers
//   for any group from the catalog and the cluster view. The topic is
//   created on the first group request.
// * A transactional id's coordinator (key type 1) is the leader of
//   __transaction_state partition abs(javaHashCode(id)) % partitions, the
//   topic created on the first transactional request (node/coord). Other key
//   types: INVALID_REQUEST.
//
// Version notes:
// * v1: CoordinatorType, ErrorMessage
// * v3: flexible versions
// * v4: several keys per request (KIP-699), answered one by one
// * v5: TRANSACTION_ABORTABLE may be returned (KIP-890; never here)
// * v6: key type 2, share groups (KIP-932). Spool has no share groups:
//   INVALID_REQUEST, as for any key type it does not coordinate.

func (n *Node) handleFindCoordinator(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	who := n.requesterOf(ctx, wreq)
	find := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		if c, denied := coordinatorDenied(who, req.CoordinatorType, key); denied {
			return c
		}
		return n.findCoordinator(req.CoordinatorType, key, n.listenerNameOf(ctx))
	}
	if req.Version < 4 {
		c := find(req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if c.ErrorCode != 0 {
			resp.ErrorMessage = kmsg.StringPtr(kerr.ErrorForCode(c.ErrorCode).Error())
		}
		return resp
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, find(key))
	}
	return resp
}

// coordinatorDenied is Kafka's check before looking a coordinator up:
// DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func coordinatorDenied(who requester, keyType int8, key string) (kmsg.FindCoordinatorResponseCoordinator, bool) {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	var e *kerr.Error
	switch keyType {
	case 0:
		if !who.mayGroup(kmsg.ACLOperationDescribe, key) {
			e = kerr.GroupAuthorizationFailed
		}
	case 1:
		if !who.mayTransactionalID(kmsg.ACLOperationDescribe, key) {
			e = kerr.TransactionalIDAuthorizationFailed
		}
	}
	if e == nil {
		return c, false
	}
	c.ErrorCode, c.ErrorMessage = e.Code, kmsg.StringPtr(e.Error())
	return c, true
}

func (n *Node) findCoordinator(keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(e *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = e.Code
		c.ErrorMessage = kmsg.StringPtr(e.Error())
		return c
	}
	switch {
	case keyType != 0 && keyType != 1, key == "" && keyType == 1:
		return fail(kerr.InvalidRequest)
	case key == "":
		return fail(kerr.InvalidGroupID)
	}
	var (
		topic  string
		p      int32
		ensure func() int16 // loads the partition when this node leads it
	)
	switch keyType {
	case 0:
		groups, err := n.coords.Groups.Get()
		if err != nil {
			n.log.WithError(err).Warn("group coordinator unavailable")
			return fail(kerr.CoordinatorNotAvailable)
		}
		topic, p = group.TopicName, groups.Partition(key)
		ensure = func() int16 { return coord.Code(n.coords.Groups.Ensure(groups, p)) }
	case 1:
		txns, err := n.coords.Txns.Get()
		if err != nil {
			n.log.WithError(err).Warn("transaction coordinator unavailable")
			return fail(kerr.CoordinatorNotAvailable)
		}
		topic, p = txn.TopicName, txns.Partition(key)
		ensure = func() int16 { return coord.Code(n.coords.Txns.Ensure(txns, p)) }
	default:
		return fail(kerr.InvalidRequest)
	}
	spec, ok := n.catalog.Topic(topic)
	if !ok || p >= spec.Partitions {
		return fail(kerr.CoordinatorNotAvailable)
	}
	leader := n.leaderOf(spec, p)
	if leader < 0 {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if leader == n.cfg.NodeID {
		// Load now, so the client's first group request finds the
		// groups of the partition ready.
		if code := ensure(); code != 0 {
			c.ErrorCode = code
			return c
		}
	}
	for _, b := range n.cluster.BrokersOn(listener) {
		if b.ID == leader {
			c.NodeID, c.Host, c.Port = b.ID, b.Host, b.Port
			return c
		}
	}
	return fail(kerr.CoordinatorNotAvailable)
}
