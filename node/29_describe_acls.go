package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/wire"
)

// DescribeAcls: v0-3
//
// Behavior:
// * Lists the cluster's ACL bindings (as this node holds them: one just
//   made on another node shows once gossip or anti-entropy brought it)
//   that the filter selects (authz.Filter: ANY fields, and MATCH for the
//   bindings that apply to a named resource), grouped by resource
//   pattern.
// * Needs DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
// * INVALID_REQUEST for a filter with an UNKNOWN code.
//
// Version notes:
// * v0: no pattern type (the filter is LITERAL)
// * v1: pattern type (KIP-290)
// * v2: flexible versions
// * v3: no change

func (n *Node) handleDescribeACLs(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("DESCRIBE on the cluster is needed to describe ACLs")
		return resp
	}
	f := authz.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if !f.Valid() {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("the filter holds an UNKNOWN code")
		return resp
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	at := map[pattern]int{}
	for _, b := range n.access.Bindings() { // in binding order: grouped by pattern already
		if !f.Matches(b) {
			continue
		}
		p := pattern{b.ResourceType, b.ResourceName, b.PatternType}
		i, ok := at[p]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = p.rt, p.name, p.pt
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			at[p] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp
}
