package node

// The node's side of authorization: which principal a connection is, and
// the authorizer built from the cluster's ACLs (the membership catalog),
// rebuilt on the first request after they change. Every handler asks it
// (apis_authz_test.go walks the API table to prove so) through a
// requester made once per request. A cluster without ACLs under the
// allow-everyone default pays two atomic loads and a branch per request.

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/wire"
)

// authzView is one build of the authorizer and the ACL generation it was
// built from.
type authzView struct {
	gen uint64
	az  *authz.Authorizer
}

// authorizer is the authorizer for the cluster's ACLs as this node holds
// them now.
func (n *Node) authorizer() *authz.Authorizer {
	var gen uint64
	agent := n.agent
	if agent != nil {
		gen = agent.ACLsGeneration()
	}
	if v := n.authzView.Load(); v != nil && v.gen == gen {
		return v.az
	}
	var bindings []authz.Binding
	if agent != nil {
		for _, b := range agent.ACLs() { // read after gen: a change meanwhile rebuilds again
			bindings = append(bindings, bindingOf(b))
		}
	}
	az := authz.New(authz.Config{SuperUsers: n.cfg.SuperUsers, AllowIfNoACL: n.cfg.AllowEveryoneIfNoACL}, bindings)
	n.authzView.Store(&authzView{gen: gen, az: az})
	return az
}

func bindingOf(b membership.ACLBinding) authz.Binding {
	return authz.Binding{ResourceType: kmsg.ACLResourceType(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: kmsg.ACLResourcePatternType(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: kmsg.ACLOperation(b.Operation), Permission: kmsg.ACLPermissionType(b.Permission)}
}

func catalogBindingOf(b authz.Binding) membership.ACLBinding {
	return membership.ACLBinding{ResourceType: int8(b.ResourceType), ResourceName: b.ResourceName,
		PatternType: int8(b.PatternType), Principal: b.Principal, Host: b.Host,
		Operation: int8(b.Operation), Permission: int8(b.Permission)}
}

// requester is who sent one request, as the authorizer sees them.
type requester struct {
	az        *authz.Authorizer
	principal string
	host      string
	apiKey    int16
	hook      func(int16, kmsg.ACLOperation, kmsg.ACLResourceType, string)
}

// requesterOf is the request's principal and host; the principal is only
// worked out when some ACL could refuse it.
func (n *Node) requesterOf(ctx context.Context, req *wire.Request) requester {
	r := requester{az: n.authorizer(), apiKey: req.APIKey, hook: n.cfg.authzHook}
	if r.az.Open() && r.hook == nil {
		return r
	}
	r.principal = principalOf(connStateOf(ctx))
	if req.RemoteAddr != nil {
		r.host = req.RemoteAddr.String()
		if h, _, err := net.SplitHostPort(r.host); err == nil {
			r.host = h
		}
	}
	return r
}

// principalOf is Kafka's default principal: User:<name> after SASL, the
// client certificate's distinguished name (User:CN=...) over mTLS
// without SASL, User:ANONYMOUS otherwise.
func principalOf(cs *connState) string {
	if cs == nil {
		return authz.Anonymous
	}
	if u := cs.sasl.User(); u != "" {
		return "User:" + u
	}
	if cs.tlsPeer != "" {
		return "User:" + cs.tlsPeer
	}
	return authz.Anonymous
}

// may reports whether the requester may do op on the resource.
func (r requester) may(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if r.hook != nil {
		r.hook(r.apiKey, op, rt, name)
	}
	return r.az.Authorize(r.principal, r.host, op, rt, name)
}

func (r requester) mayTopic(op kmsg.ACLOperation, topic string) bool {
	return r.may(op, kmsg.ACLResourceTypeTopic, topic)
}

func (r requester) mayGroup(op kmsg.ACLOperation, group string) bool {
	return r.may(op, kmsg.ACLResourceTypeGroup, group)
}

func (r requester) mayCluster(op kmsg.ACLOperation) bool {
	return r.may(op, kmsg.ACLResourceTypeCluster, authz.ClusterName)
}

func (r requester) mayTransactionalID(op kmsg.ACLOperation, id string) bool {
	return r.may(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// mayCreateTopic is Kafka's rule for creating a topic: CREATE on the
// cluster, or on the topic.
func (r requester) mayCreateTopic(topic string) bool {
	return r.mayCluster(kmsg.ACLOperationCreate) || r.mayTopic(kmsg.ACLOperationCreate, topic)
}

// groupCoordinatorAs is coords.Groups.For behind Kafka's group rule:
// op on the group, else GROUP_AUTHORIZATION_FAILED, asked first.
func (n *Node) groupCoordinatorAs(who requester, op kmsg.ACLOperation, groupID string) (*group.Coordinator, int16) {
	if !who.mayGroup(op, groupID) {
		return nil, kerr.GroupAuthorizationFailed.Code
	}
	return n.coords.Groups.For(groupID)
}

// alterConfigsDenied is the refusal of AlterConfigs and
// IncrementalAlterConfigs for a resource the requester may not
// ALTER_CONFIGS, nil when it may (or the resource type is one the
// handler refuses anyway).
func alterConfigsDenied(who requester, rt kmsg.ConfigResourceType, name string) error {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !who.mayTopic(kmsg.ACLOperationAlterConfigs, name) {
			return &topicError{kerr.TopicAuthorizationFailed, "ALTER_CONFIGS on the topic is needed"}
		}
	case kmsg.ConfigResourceTypeBroker:
		if !who.mayCluster(kmsg.ACLOperationAlterConfigs) {
			return &topicError{kerr.ClusterAuthorizationFailed, "ALTER_CONFIGS on the cluster is needed"}
		}
	}
	return nil
}

// topicOperations are Kafka's operations on a topic, as bits of
// kmsg.ACLOperation, for authorized-operations fields.
const topicOperations = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationCreate |
	1<<kmsg.ACLOperationDelete | 1<<kmsg.ACLOperationAlter | 1<<kmsg.ACLOperationDescribe |
	1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs

// groupOperations are Kafka's operations on a group.
const groupOperations = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationDelete

// authorizedOperations is the subset of ops (bits) the requester may do
// on the resource, as Kafka fills authorized-operations fields.
func (r requester) authorizedOperations(ops int32, rt kmsg.ACLResourceType, name string) int32 {
	var out int32
	for op := kmsg.ACLOperationRead; op <= kmsg.ACLOperationDescribeTokens; op++ {
		if ops&(1<<op) != 0 && r.may(op, rt, name) {
			out |= 1 << op
		}
	}
	return out
}

// mayAny reports whether the requester may do op on some resource of
// type rt (Kafka's authorizeByResourceType).
func (r requester) mayAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if r.hook != nil {
		r.hook(r.apiKey, op, rt, "")
	}
	return r.az.AuthorizeAny(r.principal, r.host, op, rt)
}

// validPrincipal checks a principal's form, Type:name, as Kafka parses
// it.
func validPrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("principal %.80q is not of the form Type:name (User:alice)", p)
	}
	return nil
}
