package node

// What the two client quota APIs share: reading an entity off the wire
// and writing one back (Kafka's KIP-546 entity model; membership/quota.go
// holds the rules).

import (
	"fmt"
	"sort"

	"github.com/spool-log/spool/membership"
)

// quotaComponent is one (type, name) pair of an entity as the wire
// carries it: a nil name is the type's default.
type quotaComponent struct {
	typ  string
	name *string
}

// quotaEntityOf builds an entity from its wire components, refusing an
// unknown or repeated type and whatever Kafka refuses of the entity
// (QuotaEntity.Validate).
func quotaEntityOf(cs []quotaComponent) (membership.QuotaEntity, error) {
	var e membership.QuotaEntity
	for _, c := range cs {
		var slot *membership.QuotaName
		switch c.typ {
		case membership.QuotaEntityUser:
			slot = &e.User
		case membership.QuotaEntityClientID:
			slot = &e.ClientID
		case membership.QuotaEntityIP:
			slot = &e.IP
		default:
			return e, fmt.Errorf("unknown quota entity type %s: want user, client-id or ip", quote60(c.typ))
		}
		if slot.Set {
			return e, fmt.Errorf("entity type %s appears more than once", c.typ)
		}
		if c.name == nil {
			*slot = membership.QuotaDefault()
		} else {
			*slot = membership.QuotaNamed(*c.name)
		}
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}

// quotaComponents is e as the wire carries it, user, client-id and ip in
// that order.
func quotaComponents(e membership.QuotaEntity) []quotaComponent {
	var out []quotaComponent
	add := func(typ string, n membership.QuotaName) {
		if !n.Set {
			return
		}
		c := quotaComponent{typ: typ}
		if !n.Default {
			name := n.Name
			c.name = &name
		}
		out = append(out, c)
	}
	add(membership.QuotaEntityUser, e.User)
	add(membership.QuotaEntityClientID, e.ClientID)
	add(membership.QuotaEntityIP, e.IP)
	return out
}

// quotaValues groups the live quotas by entity, in entity order, each
// entity's keys sorted.
func (n *Node) quotaValues() ([]membership.QuotaEntity, map[membership.QuotaEntity]map[string]float64) {
	if n.agent == nil {
		return nil, nil
	}
	by := map[membership.QuotaEntity]map[string]float64{}
	var order []membership.QuotaEntity
	for _, q := range n.agent.Quotas() { // in entity order
		m, ok := by[q.Entity]
		if !ok {
			m = map[string]float64{}
			by[q.Entity] = m
			order = append(order, q.Entity)
		}
		m[q.Key] = q.Value
	}
	return order, by
}

func sortedQuotaKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quote60 quotes a client's string for a message, cut at 60 bytes.
func quote60(s string) string { return fmt.Sprintf("%.60q", s) }
