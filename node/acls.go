package node

// What the three ACL APIs share: checking a binding a client asks to
// create, and reading a filter.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
)

// checkNewBinding returns why Kafka would refuse to create b
// (INVALID_REQUEST), or "".
func checkNewBinding(b authz.Binding) string {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId:
	default:
		return "resource type must be TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID"
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return "resource pattern type must be LITERAL or PREFIXED"
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && (b.ResourceName != authz.ClusterName || b.PatternType != kmsg.ACLResourcePatternTypeLiteral) {
		return "the cluster resource is the literal " + authz.ClusterName
	}
	if b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationDescribeTokens {
		return "operation must be a concrete operation or ALL"
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return "permission must be ALLOW or DENY"
	}
	if err := validPrincipal(b.Principal); err != nil {
		return err.Error()
	}
	if err := catalogBindingOf(b).Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// liveBindings are the cluster's ACLs as this node holds them.
func (n *Node) liveBindings() []authz.Binding {
	if n.agent == nil {
		return nil
	}
	all := n.agent.ACLs()
	out := make([]authz.Binding, len(all))
	for i, b := range all {
		out[i] = bindingOf(b)
	}
	return out
}

func catalogBindings(bs []authz.Binding) []membership.ACLBinding {
	out := make([]membership.ACLBinding, len(bs))
	for i, b := range bs {
		out[i] = catalogBindingOf(b)
	}
	return out
}
