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

// DeleteAcls: v0-3
//
// Behavior:
// * Deletes, cluster-wide, every ACL binding this node holds that one of
//   the filters selects (as DescribeAcls selects), all in one save; each
//   filter's result lists the bindings it matched. A binding created on
//   another node and not yet here is not deleted: describe first.
// * Needs ALTER on the cluster, else every filter's result is
//   CLUSTER_AUTHORIZATION_FAILED.
// * INVALID_REQUEST for a filter with an UNKNOWN code;
//   KAFKA_STORAGE_ERROR when the catalog cannot be saved (nothing
//   deleted).
//
// Version notes:
// * v0: no pattern type (filters are LITERAL)
// * v1: pattern type (KIP-290)
// * v2: flexible versions
// * v3: no change

func (n *Node) handleDeleteACLs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	fail := func(i int, err *kerr.Error, msg string) {
		resp.Results[i].ErrorCode = err.Code
		resp.Results[i].ErrorMessage = &msg
		resp.Results[i].MatchingACLs = nil
	}
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlter) {
		for i := range resp.Results {
			fail(i, kerr.ClusterAuthorizationFailed, "ALTER on the cluster is needed to delete ACLs")
		}
		return resp
	}
	live := n.access.Bindings()
	var doomed []authz.Binding
	seen := map[authz.Binding]bool{}
	var valid []int
	for i, rf := range req.Filters {
		f := authz.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
			Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
		if req.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		if !f.Valid() {
			fail(i, kerr.InvalidRequest, "the filter holds an UNKNOWN code")
			continue
		}
		valid = append(valid, i)
		for _, b := range live {
			if !f.Matches(b) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			if !seen[b] {
				seen[b] = true
				doomed = append(doomed, b)
			}
		}
	}
	if len(doomed) == 0 {
		return resp
	}
	if err := n.agent.DeleteACLs(authz.CatalogBindings(doomed)); err != nil {
		n.log.WithError(err).Warn("delete ACLs")
		e, msg := kerr.UnknownServerError, "the ACLs could not be deleted"
		if errors.Is(err, membership.ErrNotDurable) {
			e, msg = kerr.KafkaStorageError, "the deletion could not be saved; nothing changed"
		}
		for _, i := range valid {
			fail(i, e, msg)
		}
	}
	return resp
}
