package membership

// ACLs as the catalog holds them: one entry per Kafka ACL binding
// (resource pattern, principal, host, operation, permission), live or a
// tombstone, spread, merged, persisted and pulled exactly as SCRAM users
// are. The numbers are Kafka's protocol codes; what they mean and how
// they match a request is the node's authorizer's business.

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Kafka's codes for what a stored binding may hold (filters' ANY and
// MATCH are never stored).
const (
	ACLResourceTopic           int8 = 2
	ACLResourceGroup           int8 = 3
	ACLResourceCluster         int8 = 4
	ACLResourceTransactionalID int8 = 5

	ACLPatternLiteral  int8 = 3
	ACLPatternPrefixed int8 = 4

	ACLOperationAll            int8 = 2
	ACLOperationDescribeTokens int8 = 14

	ACLPermissionDeny  int8 = 2
	ACLPermissionAllow int8 = 3

	// MaxACLs bounds the live bindings a cluster holds, so the catalog
	// every node keeps, saves and serves to peers stays small (a binding
	// is about 200 bytes of JSON).
	MaxACLs = 10000

	maxACLNameLen      = 1024
	maxACLPrincipalLen = 1024
	maxACLHostLen      = 255
)

var (
	ErrInvalidACL  = errors.New("invalid ACL entry")
	ErrTooManyACLs = fmt.Errorf("more than %d ACLs", MaxACLs)
)

// ACLBinding is one ACL. It is also an entry's key: a binding is created
// (live) or deleted (tombstone) whole, never changed.
type ACLBinding struct {
	ResourceType int8   `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  int8   `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

// ACLEntry is a binding with its version. The higher (Lamport, Origin)
// wins, then a tombstone, as for users: a delete and a create of one
// binding made concurrently settle on the same answer everywhere.
type ACLEntry struct {
	ACLBinding
	Deleted bool   `json:"deleted,omitempty"`
	Lamport uint64 `json:"lamport"`
	Origin  int32  `json:"origin"`
}

func (e ACLEntry) key() ACLBinding { return e.ACLBinding }

func (e ACLEntry) lamport() uint64 { return e.Lamport }

func (e ACLEntry) clone() ACLEntry { return e }

func (e ACLEntry) newerThan(o ACLEntry) bool {
	if e.Lamport != o.Lamport {
		return e.Lamport > o.Lamport
	}
	if e.Origin != o.Origin {
		return e.Origin > o.Origin
	}
	return e.Deleted && !o.Deleted
}

// less orders bindings field by field, as the digest reads them.
func (e ACLEntry) less(o ACLEntry) bool { return e.ACLBinding.less(o.ACLBinding) }

func (b ACLBinding) less(o ACLBinding) bool {
	switch {
	case b.ResourceType != o.ResourceType:
		return b.ResourceType < o.ResourceType
	case b.ResourceName != o.ResourceName:
		return b.ResourceName < o.ResourceName
	case b.PatternType != o.PatternType:
		return b.PatternType < o.PatternType
	case b.Principal != o.Principal:
		return b.Principal < o.Principal
	case b.Host != o.Host:
		return b.Host < o.Host
	case b.Operation != o.Operation:
		return b.Operation < o.Operation
	}
	return b.Permission < o.Permission
}

// appendDigest appends the binding's bytes for Catalog.Digest: the codes
// as single bytes, each string followed by 0x00 (validate forbids NUL).
func (b ACLBinding) appendDigest(buf []byte) []byte {
	buf = append(buf, byte(b.ResourceType))
	buf = append(buf, b.ResourceName...)
	buf = append(buf, 0, byte(b.PatternType))
	buf = append(buf, b.Principal...)
	buf = append(buf, 0)
	buf = append(buf, b.Host...)
	return append(buf, 0, byte(b.Operation), byte(b.Permission))
}

// Validate checks a binding before it is stored: known codes, and names
// that are valid UTF-8 without NUL, within bounds.
func (b ACLBinding) Validate() error {
	switch b.ResourceType {
	case ACLResourceTopic, ACLResourceGroup, ACLResourceCluster, ACLResourceTransactionalID:
	default:
		return fmt.Errorf("%w: resource type %d", ErrInvalidACL, b.ResourceType)
	}
	if b.PatternType != ACLPatternLiteral && b.PatternType != ACLPatternPrefixed {
		return fmt.Errorf("%w: pattern type %d", ErrInvalidACL, b.PatternType)
	}
	if b.Operation < ACLOperationAll || b.Operation > ACLOperationDescribeTokens {
		return fmt.Errorf("%w: operation %d", ErrInvalidACL, b.Operation)
	}
	if b.Permission != ACLPermissionDeny && b.Permission != ACLPermissionAllow {
		return fmt.Errorf("%w: permission %d", ErrInvalidACL, b.Permission)
	}
	for _, f := range []struct {
		what, s string
		max     int
	}{{"resource name", b.ResourceName, maxACLNameLen}, {"principal", b.Principal, maxACLPrincipalLen}, {"host", b.Host, maxACLHostLen}} {
		if f.s == "" || len(f.s) > f.max {
			return fmt.Errorf("%w: %s length %d not in 1..%d", ErrInvalidACL, f.what, len(f.s), f.max)
		}
		if !utf8.ValidString(f.s) {
			return fmt.Errorf("%w: %s is not UTF-8", ErrInvalidACL, f.what)
		}
		for i := 0; i < len(f.s); i++ {
			if f.s[i] == 0 {
				return fmt.Errorf("%w: %s holds a NUL", ErrInvalidACL, f.what)
			}
		}
	}
	return nil
}

func (e ACLEntry) validate() error { return e.ACLBinding.Validate() }
