package authz

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckNewBinding returns why Kafka would refuse to create b
// (INVALID_REQUEST), or "".
func CheckNewBinding(b Binding) string {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId:
	default:
		return "resource type must be TOPIC, GROUP, CLUSTER or TRANSACTIONAL_ID"
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return "resource pattern type must be LITERAL or PREFIXED"
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && (b.ResourceName != ClusterName || b.PatternType != kmsg.ACLResourcePatternTypeLiteral) {
		return "the cluster resource is the literal " + ClusterName
	}
	if b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationDescribeTokens {
		return "operation must be a concrete operation or ALL"
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return "permission must be ALLOW or DENY"
	}
	if err := ValidPrincipal(b.Principal); err != nil {
		return err.Error()
	}
	if err := CatalogBindingOf(b).Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// ValidPrincipal checks a principal's form, Type:name, as Kafka parses
// it.
func ValidPrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("principal %.80q is not of the form Type:name (User:alice)", p)
	}
	return nil
}
