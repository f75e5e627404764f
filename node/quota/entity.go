package quota

// The client quota APIs' entities as the wire carries them (Kafka's
// KIP-546 entity model; membership/quota.go holds the rules): reading one
// off the wire, writing one back, and the live quotas grouped by entity.

import (
	"fmt"
	"sort"

	"github.com/spool-log/spool/membership"
)

// Component is one (type, name) pair of an entity as the wire carries
// it: a nil name is the type's default.
type Component struct {
	Type string
	Name *string
}

// EntityOf builds an entity from its wire components, refusing an
// unknown or repeated type and whatever Kafka refuses of the entity
// (QuotaEntity.Validate).
func EntityOf(cs []Component) (membership.QuotaEntity, error) {
	var e membership.QuotaEntity
	for _, c := range cs {
		var slot *membership.QuotaName
		switch c.Type {
		case membership.QuotaEntityUser:
			slot = &e.User
		case membership.QuotaEntityClientID:
			slot = &e.ClientID
		case membership.QuotaEntityIP:
			slot = &e.IP
		default:
			return e, fmt.Errorf("unknown quota entity type %.60q: want user, client-id or ip", c.Type)
		}
		if slot.Set {
			return e, fmt.Errorf("entity type %s appears more than once", c.Type)
		}
		if c.Name == nil {
			*slot = membership.QuotaDefault()
		} else {
			*slot = membership.QuotaNamed(*c.Name)
		}
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}

// ComponentsOf is e as the wire carries it, user, client-id and ip in
// that order.
func ComponentsOf(e membership.QuotaEntity) []Component {
	var out []Component
	add := func(typ string, n membership.QuotaName) {
		if !n.Set {
			return
		}
		c := Component{Type: typ}
		if !n.Default {
			name := n.Name
			c.Name = &name
		}
		out = append(out, c)
	}
	add(membership.QuotaEntityUser, e.User)
	add(membership.QuotaEntityClientID, e.ClientID)
	add(membership.QuotaEntityIP, e.IP)
	return out
}

// ByEntity groups quotas (in entity order, as the catalog lists them) by
// entity, keeping that order.
func ByEntity(quotas []membership.QuotaEntry) ([]membership.QuotaEntity, map[membership.QuotaEntity]map[string]float64) {
	if quotas == nil {
		return nil, nil
	}
	by := map[membership.QuotaEntity]map[string]float64{}
	var order []membership.QuotaEntity
	for _, q := range quotas {
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

// SortedKeys are m's keys, sorted.
func SortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
