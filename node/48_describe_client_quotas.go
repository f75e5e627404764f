package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/wire"
)

// DescribeClientQuotas: v0-1
//
// Behavior:
// * Lists the client quotas (KIP-546) the cluster holds, as this node
//   holds them (one just altered on another node shows once gossip or
//   anti-entropy brought it), one entry per entity with its keys and
//   values; entity components come user, client-id, ip, a null name
//   being the type's default.
// * The filter's components each name an entity type (user, client-id,
//   ip) at most once and a match: EXACT (0) the given name, DEFAULT (1)
//   the type's default entity, ANY (2, Kafka's MATCH_TYPE_SPECIFIED) any
//   name or the default. An entity matches when it has every filtered
//   type as filtered; Strict also wants it to have no other type. No
//   components and not Strict lists everything.
// * Needs DESCRIBE_CONFIGS on the cluster, else
//   CLUSTER_AUTHORIZATION_FAILED (as Kafka).
// * INVALID_REQUEST, with a message, for an unknown or repeated entity
//   type, an unknown match type, an EXACT match without a name or a
//   DEFAULT or ANY match with one, and ip filtered beside user or
//   client-id.
//
// Version notes:
// * v0: the API (Kafka 2.6)
// * v1: flexible versions

func (n *Node) handleDescribeClientQuotas(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(err *kerr.Error, msg string) wire.Response {
		resp.ErrorCode = err.Code
		resp.ErrorMessage = &msg
		resp.Entries = nil
		return resp
	}
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed, "DESCRIBE_CONFIGS on the cluster is needed to describe client quotas")
	}
	f, why := quotaFilterOf(req)
	if why != "" {
		return fail(kerr.InvalidRequest, why)
	}
	order, values := n.access.QuotasByEntity()
	for _, e := range order {
		if !f.matches(e) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range quota.ComponentsOf(e) {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ec)
		}
		vs := values[e]
		for _, k := range quota.SortedKeys(vs) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, vs[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

// quotaMatch is one filtered type: any (a name or the default), the
// default, or one name.
type quotaMatch struct {
	any, dflt bool
	name      string
}

func (m quotaMatch) matches(n membership.QuotaName) bool {
	switch {
	case !n.Set:
		return false
	case m.any:
		return true
	case m.dflt:
		return n.Default
	}
	return !n.Default && n.Name == m.name
}

type quotaFilter struct {
	by     map[string]quotaMatch
	strict bool
}

func (f quotaFilter) matches(e membership.QuotaEntity) bool {
	comps := map[string]membership.QuotaName{
		membership.QuotaEntityUser: e.User, membership.QuotaEntityClientID: e.ClientID, membership.QuotaEntityIP: e.IP}
	for typ, n := range comps {
		m, filtered := f.by[typ]
		if filtered && !m.matches(n) {
			return false
		}
		if !filtered && f.strict && n.Set {
			return false
		}
	}
	return true
}

// quotaFilterOf reads the request's filter, or returns why Kafka would
// refuse it.
func quotaFilterOf(req *kmsg.DescribeClientQuotasRequest) (quotaFilter, string) {
	f := quotaFilter{by: map[string]quotaMatch{}, strict: req.Strict}
	for _, c := range req.Components {
		switch c.EntityType {
		case membership.QuotaEntityUser, membership.QuotaEntityClientID, membership.QuotaEntityIP:
		default:
			return f, "unknown quota entity type " + fmt.Sprintf("%.60q", c.EntityType) + ": want user, client-id or ip"
		}
		if _, dup := f.by[c.EntityType]; dup {
			return f, "entity type " + c.EntityType + " cannot appear more than once in the filter"
		}
		var m quotaMatch
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return f, "an EXACT match on " + c.EntityType + " needs a name"
			}
			m.name = *c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return f, "a DEFAULT match on " + c.EntityType + " takes no name"
			}
			m.dflt = true
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return f, "an ANY match on " + c.EntityType + " takes no name"
			}
			m.any = true
		default:
			return f, "unknown match type " + c.MatchType.String()
		}
		f.by[c.EntityType] = m
	}
	_, ip := f.by[membership.QuotaEntityIP]
	if ip && len(f.by) > 1 {
		return f, "an ip filter cannot be combined with a user or client-id filter"
	}
	return f, ""
}
