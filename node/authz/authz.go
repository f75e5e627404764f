// Package authz is the broker's authorizer: Kafka's ACL semantics
// (StandardAuthorizer, as of Kafka 3.x/4.x) over one immutable set of
// bindings. A request is allowed when its principal is a super user;
// else the ACLs whose resource pattern matches the resource (a literal of
// the same name, the literal wildcard "*", or a prefix of the name)
// decide: none at all gives the configured default
// (allow.everyone.if.no.acl.found: off, no ACL matching means deny); a DENY for the principal (or User:*),
// the host (or *) and the operation (or ALL) refuses whatever else allows;
// otherwise an ALLOW for the operation, ALL, or an operation that implies
// it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
// DESCRIBE_CONFIGS) is needed.
//
// A cluster with no ACL at all is open to everyone, whatever the default:
// the quick start works with no setup, and the first ACL closes every
// resource no ACL allows (unless AllowIfNoACL). Kafka denies everything
// with no ACLs under allow.everyone.if.no.acl.found=false; here that takes
// one ACL.
//
// An Authorizer never changes; a View (view.go) builds a new one on the
// first request after the cluster's ACLs change. Open reports the common
// case of no ACLs, which callers test first so that a cluster without
// ACLs pays nothing per request. A Requester (requester.go) is one
// request's principal and host, which its handler asks; check.go holds
// Kafka's rules for a binding a client asks to create.
//
// Locks: none; View swaps its build behind an atomic pointer.
package authz

import (
	"net/netip"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterName is the name of the one cluster resource, as Kafka names it.
const ClusterName = "kafka-cluster"

// Anonymous is the principal of a connection that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// WildcardPrincipal in a binding matches every user.
const WildcardPrincipal = "User:*"

// Wildcard is the literal resource name and host that match any.
const Wildcard = "*"

// Binding is one ACL, in Kafka's protocol codes.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Config is what an operator sets.
type Config struct {
	// SuperUsers are principals ("User:alice", "User:CN=admin,O=x")
	// allowed everything.
	SuperUsers []string
	// AllowIfNoACL allows a request on a resource no ACL matches in a
	// cluster that has ACLs (Kafka's allow.everyone.if.no.acl.found=true);
	// off, such a request is denied to all but the super users.
	AllowIfNoACL bool
}

// Authorizer decides requests against one set of bindings.
type Authorizer struct {
	super        map[string]bool
	allowIfNoACL bool
	open         bool
	byType       map[kmsg.ACLResourceType]*typeACLs
}

// typeACLs are the bindings of one resource type, by pattern.
type typeACLs struct {
	literal  map[string][]rule // the name "*" included
	prefixed []rule
}

// rule is a binding with its host parsed once.
type rule struct {
	Binding
	ip    netip.Addr // invalid for "*" or a host that is not an IP
	anyIP bool
}

// New builds an authorizer over bindings; those of unknown resource or
// pattern types are ignored (the catalog refuses them anyway).
func New(cfg Config, bindings []Binding) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNoACL: cfg.AllowIfNoACL,
		byType: map[kmsg.ACLResourceType]*typeACLs{}}
	for _, s := range cfg.SuperUsers {
		a.super[s] = true
	}
	n := 0
	for _, b := range bindings {
		t := a.byType[b.ResourceType]
		if t == nil {
			t = &typeACLs{literal: map[string][]rule{}}
			a.byType[b.ResourceType] = t
		}
		r := rule{Binding: b, anyIP: b.Host == Wildcard}
		if ip, err := netip.ParseAddr(b.Host); err == nil {
			r.ip = ip.Unmap()
		}
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			t.literal[b.ResourceName] = append(t.literal[b.ResourceName], r)
		case kmsg.ACLResourcePatternTypePrefixed:
			t.prefixed = append(t.prefixed, r)
		default:
			continue
		}
		n++
	}
	a.open = n == 0
	return a
}

// Open reports that every request is allowed: there are no ACLs.
func (a *Authorizer) Open() bool { return a.open }

// IsSuperUser reports whether principal is one of the super users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize reports whether principal, connected from host (an IP
// address, no port), may do op on the resource of type rt named name.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.open || a.super[principal] {
		return true
	}
	t := a.byType[rt]
	if t == nil {
		return a.allowIfNoACL
	}
	hostIP, _ := netip.ParseAddr(host)
	hostIP = hostIP.Unmap()
	found, allowed := false, false
	check := func(rules []rule) bool { // false: denied
		for i := range rules {
			r := &rules[i]
			found = true
			if !r.appliesTo(principal, host, hostIP) {
				continue
			}
			if r.Permission == kmsg.ACLPermissionTypeDeny {
				if r.Operation == op || r.Operation == kmsg.ACLOperationAll {
					return false
				}
				continue
			}
			if r.Permission == kmsg.ACLPermissionTypeAllow && grants(r.Operation, op) {
				allowed = true
			}
		}
		return true
	}
	if !check(t.literal[name]) || !check(t.literal[Wildcard]) {
		return false
	}
	for i := range t.prefixed {
		if strings.HasPrefix(name, t.prefixed[i].ResourceName) && !check(t.prefixed[i:i+1]) {
			return false
		}
	}
	if !found {
		return a.allowIfNoACL
	}
	return allowed
}

func (r *rule) appliesTo(principal, host string, hostIP netip.Addr) bool {
	if r.Principal != principal && !(r.Principal == WildcardPrincipal && strings.HasPrefix(principal, "User:")) {
		return false
	}
	if r.anyIP || r.Host == host {
		return true
	}
	return r.ip.IsValid() && r.ip == hostIP
}

// grants reports whether an ALLOW for acl permits op.
func grants(acl, op kmsg.ACLOperation) bool {
	if acl == op || acl == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch acl {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return acl == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// AuthorizeAny reports whether principal may do op on at least one
// resource of type rt, as Kafka's authorizeByResourceType (KIP-679):
// InitProducerId for an idempotent producer needs IDEMPOTENT_WRITE on the
// cluster or WRITE on any topic. A super user may; the default applies
// when no ACL matches a resource of a name no binding names; else some
// ALLOW (op or ALL) pattern must not be covered by a DENY of the same or a
// wider pattern.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.open || a.super[principal] {
		return true
	}
	// Kafka first asks about a resource named as no real one is.
	if a.Authorize(principal, host, op, rt, "\x00unnamed") {
		return true
	}
	t := a.byType[rt]
	if t == nil {
		return false
	}
	hostIP, _ := netip.ParseAddr(host)
	hostIP = hostIP.Unmap()
	denyLiteral := map[string]bool{}
	var denyPrefix []string
	var allowLiteral, allowPrefix []string
	collect := func(r *rule) {
		if !r.appliesTo(principal, host, hostIP) || (r.Operation != op && r.Operation != kmsg.ACLOperationAll) {
			return
		}
		switch {
		case r.Permission == kmsg.ACLPermissionTypeDeny && r.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			denyLiteral[r.ResourceName] = true
		case r.Permission == kmsg.ACLPermissionTypeDeny:
			denyPrefix = append(denyPrefix, r.ResourceName)
		case r.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			allowLiteral = append(allowLiteral, r.ResourceName)
		default:
			allowPrefix = append(allowPrefix, r.ResourceName)
		}
	}
	for _, rules := range t.literal {
		for i := range rules {
			collect(&rules[i])
		}
	}
	for i := range t.prefixed {
		collect(&t.prefixed[i])
	}
	if denyLiteral[Wildcard] {
		return false
	}
	coveredByDenyPrefix := func(name string) bool {
		for _, p := range denyPrefix {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if name == Wildcard || (!denyLiteral[name] && !coveredByDenyPrefix(name)) {
			return true
		}
	}
	for _, name := range allowPrefix {
		if !coveredByDenyPrefix(name) {
			return true
		}
	}
	return false
}
