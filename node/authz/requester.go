package authz

import "github.com/twmb/franz-go/pkg/kmsg"

// Requester is who sent one request, as the authorizer sees them: made
// once per request (node/access), asked by the request's handler.
type Requester struct {
	Authorizer *Authorizer
	// Principal and Host are worked out only when some ACL could refuse
	// the request (or a Hook watches): under an open authorizer they stay
	// empty and cost nothing.
	Principal string
	Host      string
	APIKey    int16
	// Hook, when set (tests), sees every question asked.
	Hook func(apiKey int16, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string)
}

// TopicOperations are Kafka's operations on a topic, as bits of
// kmsg.ACLOperation, for authorized-operations fields.
const TopicOperations = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationWrite | 1<<kmsg.ACLOperationCreate |
	1<<kmsg.ACLOperationDelete | 1<<kmsg.ACLOperationAlter | 1<<kmsg.ACLOperationDescribe |
	1<<kmsg.ACLOperationDescribeConfigs | 1<<kmsg.ACLOperationAlterConfigs

// GroupOperations are Kafka's operations on a group.
const GroupOperations = 1<<kmsg.ACLOperationRead | 1<<kmsg.ACLOperationDescribe | 1<<kmsg.ACLOperationDelete

// May reports whether the requester may do op on the resource.
func (r Requester) May(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if r.Hook != nil {
		r.Hook(r.APIKey, op, rt, name)
	}
	return r.Authorizer.Authorize(r.Principal, r.Host, op, rt, name)
}

func (r Requester) MayTopic(op kmsg.ACLOperation, topic string) bool {
	return r.May(op, kmsg.ACLResourceTypeTopic, topic)
}

func (r Requester) MayGroup(op kmsg.ACLOperation, group string) bool {
	return r.May(op, kmsg.ACLResourceTypeGroup, group)
}

func (r Requester) MayCluster(op kmsg.ACLOperation) bool {
	return r.May(op, kmsg.ACLResourceTypeCluster, ClusterName)
}

func (r Requester) MayTransactionalID(op kmsg.ACLOperation, id string) bool {
	return r.May(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// MayCreateTopic is Kafka's rule for creating a topic: CREATE on the
// cluster, or on the topic.
func (r Requester) MayCreateTopic(topic string) bool {
	return r.MayCluster(kmsg.ACLOperationCreate) || r.MayTopic(kmsg.ACLOperationCreate, topic)
}

// AuthorizedOperations is the subset of ops (bits) the requester may do
// on the resource, as Kafka fills authorized-operations fields.
func (r Requester) AuthorizedOperations(ops int32, rt kmsg.ACLResourceType, name string) int32 {
	var out int32
	for op := kmsg.ACLOperationRead; op <= kmsg.ACLOperationDescribeTokens; op++ {
		if ops&(1<<op) != 0 && r.May(op, rt, name) {
			out |= 1 << op
		}
	}
	return out
}

// MayAny reports whether the requester may do op on some resource of
// type rt (Kafka's authorizeByResourceType).
func (r Requester) MayAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if r.Hook != nil {
		r.Hook(r.APIKey, op, rt, "")
	}
	return r.Authorizer.AuthorizeAny(r.Principal, r.Host, op, rt)
}
