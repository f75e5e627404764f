package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/wire"
)

// CreateAcls: v0-3
//
// Behavior:
// * Adds ACL bindings cluster-wide (the membership catalog: saved on
//   this node, then spread by gossip and anti-entropy to every node). The
//   valid creations of a request are saved together; one result per
//   creation, in order. Creating a binding that exists is a success.
// * Needs ALTER on the cluster, else every result is
//   CLUSTER_AUTHORIZATION_FAILED.
// * Errors per creation: INVALID_REQUEST for a resource type other than
//   TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID, a pattern type other than
//   LITERAL or PREFIXED, a cluster resource other than the literal
//   "kafka-cluster", an operation or permission of ANY/UNKNOWN, a
//   principal not of the form Type:name, an empty name or host;
//   KAFKA_STORAGE_ERROR when the catalog cannot be saved (nothing
//   changed: retry); INVALID_REQUEST for creations that would take the
//   cluster past membership.MaxACLs bindings (none is made).
//
// Version notes:
// * v0: no pattern type (LITERAL)
// * v1: pattern type (KIP-290)
// * v2: flexible versions
// * v3: no change (Kafka 3.x's current version; Kafka 4 drops v0)

func (n *Node) handleCreateACLs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	fail := func(i int, err *kerr.Error, msg string) {
		resp.Results[i].ErrorCode = err.Code
		resp.Results[i].ErrorMessage = &msg
	}
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlter) {
		for i := range resp.Results {
			fail(i, kerr.ClusterAuthorizationFailed, "ALTER on the cluster is needed to create ACLs")
		}
		return resp
	}
	var valid []authz.Binding
	var at []int
	for i, c := range req.Creations {
		b := authz.Binding{ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if req.Version == 0 {
			b.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if why := authz.CheckNewBinding(b); why != "" {
			fail(i, kerr.InvalidRequest, why)
			continue
		}
		valid, at = append(valid, b), append(at, i)
	}
	if len(valid) == 0 {
		return resp
	}
	err := n.createACLs(valid)
	if err != nil {
		n.log.WithError(err).Warn("create ACLs")
		e, msg := kerr.UnknownServerError, "the ACLs could not be created"
		switch {
		case errors.Is(err, membership.ErrNotDurable):
			e, msg = kerr.KafkaStorageError, "the ACLs could not be saved; nothing changed"
		case errors.Is(err, membership.ErrTooManyACLs):
			e, msg = kerr.InvalidRequest, err.Error()
		}
		for _, i := range at {
			fail(i, e, msg)
		}
	}
	return resp
}

func (n *Node) createACLs(bs []authz.Binding) error {
	if n.agent == nil {
		return errors.New("no cluster membership")
	}
	return n.agent.CreateACLs(authz.CatalogBindings(bs))
}
