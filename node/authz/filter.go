package authz

// ACL filters, as DescribeAcls and DeleteAcls carry them (Kafka's
// AclBindingFilter): each field either names a value or matches any
// (resource type, pattern type, operation and permission ANY; a nil
// resource name, principal or host). The MATCH pattern type matches the
// bindings that would apply to a resource of the given name: a literal of
// that name, the literal "*", and every prefix of it.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects bindings.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.matchesPattern(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		return f.ResourceName == nil || *f.ResourceName == b.ResourceName
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName == nil {
			return true
		}
		name := *f.ResourceName
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			return b.ResourceName == name || b.ResourceName == Wildcard
		case kmsg.ACLResourcePatternTypePrefixed:
			return strings.HasPrefix(name, b.ResourceName)
		}
		return false
	default:
		return f.PatternType == b.PatternType && (f.ResourceName == nil || *f.ResourceName == b.ResourceName)
	}
}

// Valid reports whether a filter's codes are ones a filter may hold
// (Kafka answers INVALID_REQUEST otherwise).
func (f Filter) Valid() bool {
	switch {
	case f.ResourceType < kmsg.ACLResourceTypeAny || f.ResourceType > kmsg.ACLResourceTypeUser:
		return false
	case f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return false
	case f.Operation < kmsg.ACLOperationAny || f.Operation > kmsg.ACLOperationDescribeTokens:
		return false
	case f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow:
		return false
	}
	return true
}
