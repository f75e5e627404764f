package client

// The cluster's client quotas over Kafka's AlterClientQuotas and
// DescribeClientQuotas (KIP-546), as kafka-configs.sh manages them: an
// entity is a user, a client id, both, or an ip, each a name or the
// type's default; its quotas are keys (producer_byte_rate, ...) and
// values.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// QuotaEntityPart is one component of an entity: Type user, client-id or
// ip, and Name, nil for the type's default.
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// QuotaEntity is what a quota applies to.
type QuotaEntity []QuotaEntityPart

// String prints the entity as kafka-configs does: user=alice,client-id=<default>.
func (e QuotaEntity) String() string {
	parts := make([]string, len(e))
	for i, p := range e {
		name := "<default>"
		if p.Name != nil {
			name = *p.Name
		}
		parts[i] = p.Type + "=" + name
	}
	return strings.Join(parts, ",")
}

// Quota is one entity and its quotas.
type Quota struct {
	Entity QuotaEntity        `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// Quotas is what ListQuotas returns.
type Quotas []Quota

// WriteTable prints one row per entity: the entity and its key=value
// pairs, sorted.
func (qs Quotas) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTITY\tQUOTAS")
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t%s\n", q.Entity, FormatQuotaValues(q.Values))
	}
	return tw.Flush()
}

// FormatQuotaValues prints values as k=v,k=v by key, whole numbers
// without a fraction.
func FormatQuotaValues(vs map[string]float64) string {
	keys := make([]string, 0, len(vs))
	for k := range vs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(vs[k], 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

// ParseQuotaConfigs reads kafka-configs' --add-config pairs: KEY=VALUE,
// VALUE a number. The keys are checked by the node.
func ParseQuotaConfigs(pairs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("quota %q: want KEY=VALUE", p)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("quota %s=%s: the value is not a number", k, v)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("quota %s given twice", k)
		}
		out[k] = f
	}
	return out, nil
}

// AlterQuotas sets the quotas in set and removes those in remove for
// entity, cluster-wide, all or none.
func (g Config) AlterQuotas(ctx context.Context, entity QuotaEntity, set map[string]float64, remove []string) error {
	if len(entity) == 0 {
		return errors.New("no entity: give a user, client id or ip")
	}
	if len(set) == 0 && len(remove) == 0 {
		return errors.New("nothing to change: give quotas to add or delete")
	}
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return err
	}
	defer done()
	e := kadm.AlterClientQuotaEntry{Entity: kadmEntity(entity)}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.Ops = append(e.Ops, kadm.AlterClientQuotaOp{Key: k, Value: set[k]})
	}
	for _, k := range remove {
		if _, both := set[k]; both {
			return fmt.Errorf("quota %s both added and deleted", k)
		}
		e.Ops = append(e.Ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{e})
	if err != nil {
		return fmt.Errorf("alter quotas of %s: %w", entity, err)
	}
	if len(res) != 1 {
		return fmt.Errorf("alter quotas of %s: %d results for one entity", entity, len(res))
	}
	if r := res[0]; r.Err != nil {
		return fmt.Errorf("alter quotas of %s: %w%s", entity, r.Err, errSuffix(r.ErrMessage))
	}
	return nil
}

// DeleteQuotas removes keys of entity, every key it has when keys is
// empty, and returns the keys removed.
func (g Config) DeleteQuotas(ctx context.Context, entity QuotaEntity, keys []string) ([]string, error) {
	if len(keys) == 0 {
		qs, err := g.ListQuotas(ctx, entity)
		if err != nil {
			return nil, err
		}
		if len(qs) == 0 {
			return nil, fmt.Errorf("delete quotas of %s: it has none", entity)
		}
		for k := range qs[0].Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	if err := g.AlterQuotas(ctx, entity, nil, keys); err != nil {
		return nil, err
	}
	return keys, nil
}

// ListQuotas lists the cluster's quotas: every entity's, or with filter
// only the entity made of exactly those parts (a nil name matches the
// type's default).
func (g Config) ListQuotas(ctx context.Context, filter QuotaEntity) (Quotas, error) {
	ctx, adm, done, err := g.boundedAdmin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var cs []kadm.DescribeClientQuotaComponent
	for _, p := range filter {
		c := kadm.DescribeClientQuotaComponent{Type: p.Type, MatchName: p.Name, MatchType: kmsg.QuotasMatchTypeExact}
		if p.Name == nil {
			c.MatchType = kmsg.QuotasMatchTypeDefault
		}
		cs = append(cs, c)
	}
	described, err := adm.DescribeClientQuotas(ctx, len(filter) > 0, cs)
	if err != nil {
		return nil, fmt.Errorf("list quotas: %w", err)
	}
	out := Quotas{}
	for _, d := range described {
		q := Quota{Values: map[string]float64{}}
		for _, c := range d.Entity {
			q.Entity = append(q.Entity, QuotaEntityPart{Type: c.Type, Name: c.Name})
		}
		for _, v := range d.Values {
			q.Values[v.Key] = v.Value
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity.String() < out[j].Entity.String() })
	return out, nil
}

func kadmEntity(e QuotaEntity) kadm.ClientQuotaEntity {
	out := make(kadm.ClientQuotaEntity, len(e))
	for i, p := range e {
		out[i] = kadm.ClientQuotaEntityComponent{Type: p.Type, Name: p.Name}
	}
	return out
}
