package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/wire"
)

// DescribeCluster: v0-2
//
// Behavior:
// * Authorization as Kafka's: anyone may describe the cluster; the
//   authorized operations, when asked for, are those of the cluster's
//   operations the principal may do, none unless it may DESCRIBE it.
// * Any node answers from its cluster view, as Metadata does: the cluster
//   id gossip settled on, the answering node as controller (every node
//   serves the admin APIs), and every live broker (id, advertised Kafka
//   address, rack).
// * EndpointType 2 (controllers) is MISMATCHED_ENDPOINT_TYPE, as a Kafka
//   broker answers: Spool has no separate controller listener.
//
// Version notes:
// * v1: EndpointType (request and response)
// * v2: IncludeFencedBrokers, IsFenced. Spool fences no broker: a broker in
//   the roster that gossip says is down is left out (it has no address to
//   give), and every broker listed has IsFenced false.

// clusterAuthorizedOperations is CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
// DESCRIBE_CONFIGS, ALTER_CONFIGS and IDEMPOTENT_WRITE, Kafka's cluster
// operations, as bits of kmsg.ACLOperation.
const clusterAuthorizedOperations = 1<<kmsg.ACLOperationCreate | 1<<kmsg.ACLOperationAlter |
	1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationClusterAction | 1<<kmsg.ACLOperationDescribeConfigs |
	1<<kmsg.ACLOperationAlterConfigs | 1<<kmsg.ACLOperationIdempotentWrite

// describeClusterBrokers is the EndpointType of brokers.
const describeClusterBrokers = 1

func (n *Node) handleDescribeCluster(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	if req.Version >= 1 && req.EndpointType != describeClusterBrokers {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "Spool nodes serve the broker endpoint only"
		resp.ErrorMessage = &msg
		return resp
	}
	resp.ClusterID = n.cluster.ClusterID()
	resp.ControllerID = n.cluster.ControllerID()
	for _, b := range n.cluster.BrokersOn(n.access.ListenerName(ctx)) {
		sb := kmsg.NewDescribeClusterResponseBroker()
		sb.NodeID, sb.Host, sb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			rack := b.Rack
			sb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, sb)
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = 0
		if who := n.access.Requester(ctx, wreq); who.MayCluster(kmsg.ACLOperationDescribe) {
			resp.ClusterAuthorizedOperations = who.AuthorizedOperations(clusterAuthorizedOperations, kmsg.ACLResourceTypeCluster, authz.ClusterName)
		}
	}
	return resp
}
