package node

// Client quotas through kadm (DescribeClientQuotas, AlterClientQuotas):
// Kafka's entity model and validation on one node, and across a cluster
// and a restart.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/quota"
)

func qc(typ string, name *string) kadm.ClientQuotaEntityComponent {
	return kadm.ClientQuotaEntityComponent{Type: typ, Name: name}
}

func qset(key string, v float64) kadm.AlterClientQuotaOp {
	return kadm.AlterClientQuotaOp{Key: key, Value: v}
}

// quotasString renders described quotas as "entity{k=v,...}" sorted, an
// entity's components as the node sent them.
func quotasString(qs kadm.DescribedClientQuotas) string {
	var out []string
	for _, q := range qs {
		var ent []string
		for _, c := range q.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			ent = append(ent, c.Type+"="+name)
		}
		var vs []string
		for _, v := range q.Values {
			vs = append(vs, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		out = append(out, strings.Join(ent, ",")+"{"+strings.Join(vs, ",")+"}")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestClientQuotasAdmin(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	ctx := testCtx(t)
	alice, app := kmsg.StringPtr("alice"), kmsg.StringPtr("app")

	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1048576), qset("request_percentage", 12.5)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", nil)}, Ops: []kadm.AlterClientQuotaOp{qset("consumer_byte_rate", 2048)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice), qc("client-id", app)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 4096)}},
		{Entity: kadm.ClientQuotaEntity{qc("client-id", nil), qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 8192)}},
		{Entity: kadm.ClientQuotaEntity{qc("client-id", app)}, Ops: []kadm.AlterClientQuotaOp{qset("controller_mutation_rate", 0.5)}},
		{Entity: kadm.ClientQuotaEntity{qc("ip", kmsg.StringPtr("10.1.2.3"))}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 20)}},
		{Entity: kadm.ClientQuotaEntity{qc("ip", nil)}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 100)}},
	}
	// validate_only changes nothing.
	res, err := adm.ValidateAlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("validate %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	if d, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(d) != 0 {
		t.Fatalf("after validate_only: %v %s", err, quotasString(d))
	}
	res, err = adm.AlterClientQuotas(ctx, entries)
	if err != nil || len(res) != len(entries) {
		t.Fatalf("alter: %v %+v", err, res)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}

	describe := func(strict bool, cs ...kadm.DescribeClientQuotaComponent) string {
		t.Helper()
		d, err := adm.DescribeClientQuotas(ctx, strict, cs)
		if err != nil {
			t.Fatalf("describe %+v: %v", cs, err)
		}
		return quotasString(d)
	}
	exact := func(typ, name string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchName: kmsg.StringPtr(name), MatchType: kmsg.QuotasMatchTypeExact}
	}
	dflt := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeDefault}
	}
	anyOf := func(typ string) kadm.DescribeClientQuotaComponent {
		return kadm.DescribeClientQuotaComponent{Type: typ, MatchType: kmsg.QuotasMatchTypeAny}
	}
	all := "client-id=app{controller_mutation_rate=0.5} ip=10.1.2.3{connection_creation_rate=20} ip=<default>{connection_creation_rate=100} " +
		"user=<default>{consumer_byte_rate=2048} user=alice,client-id=<default>{producer_byte_rate=8192} user=alice,client-id=app{producer_byte_rate=4096} " +
		"user=alice{producer_byte_rate=1.048576e+06,request_percentage=12.5}"
	for _, c := range []struct {
		strict bool
		cs     []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{false, nil, all},
		{true, nil, ""},
		{false, []kadm.DescribeClientQuotaComponent{exact("user", "alice")},
			"user=alice,client-id=<default>{producer_byte_rate=8192} user=alice,client-id=app{producer_byte_rate=4096} user=alice{producer_byte_rate=1.048576e+06,request_percentage=12.5}"},
		{true, []kadm.DescribeClientQuotaComponent{exact("user", "alice")}, "user=alice{producer_byte_rate=1.048576e+06,request_percentage=12.5}"},
		{true, []kadm.DescribeClientQuotaComponent{dflt("user")}, "user=<default>{consumer_byte_rate=2048}"},
		{false, []kadm.DescribeClientQuotaComponent{anyOf("user")},
			"user=<default>{consumer_byte_rate=2048} user=alice,client-id=<default>{producer_byte_rate=8192} user=alice,client-id=app{producer_byte_rate=4096} user=alice{producer_byte_rate=1.048576e+06,request_percentage=12.5}"},
		{true, []kadm.DescribeClientQuotaComponent{anyOf("user"), anyOf("client-id")},
			"user=alice,client-id=<default>{producer_byte_rate=8192} user=alice,client-id=app{producer_byte_rate=4096}"},
		{true, []kadm.DescribeClientQuotaComponent{exact("user", "alice"), dflt("client-id")}, "user=alice,client-id=<default>{producer_byte_rate=8192}"},
		{false, []kadm.DescribeClientQuotaComponent{exact("client-id", "app")}, "client-id=app{controller_mutation_rate=0.5} user=alice,client-id=app{producer_byte_rate=4096}"},
		{false, []kadm.DescribeClientQuotaComponent{anyOf("ip")}, "ip=10.1.2.3{connection_creation_rate=20} ip=<default>{connection_creation_rate=100}"},
		{false, []kadm.DescribeClientQuotaComponent{exact("user", "bob")}, ""},
	} {
		if got := describe(c.strict, c.cs...); got != c.want {
			t.Errorf("describe strict=%v %+v:\n got %s\nwant %s", c.strict, c.cs, got, c.want)
		}
	}

	// Filters Kafka refuses.
	for _, cs := range [][]kadm.DescribeClientQuotaComponent{
		{{Type: "group", MatchType: kmsg.QuotasMatchTypeAny}},
		{exact("user", "a"), dflt("user")},
		{{Type: "user", MatchType: kmsg.QuotasMatchTypeExact}},
		{{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault, MatchName: alice}},
		{{Type: "user", MatchType: 7}},
		{anyOf("ip"), anyOf("user")},
	} {
		_, err := adm.DescribeClientQuotas(ctx, false, cs)
		var em *kadm.ErrAndMessage
		if !errors.Is(err, kerr.InvalidRequest) || !errors.As(err, &em) || em.ErrMessage == "" {
			t.Errorf("describe %+v: %v, want INVALID_REQUEST with a message", cs, err)
		}
	}

	// Entries Kafka refuses, each alone, beside one good entry that is
	// made.
	bad := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer.byte.rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", -1)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1.5)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("ip", kmsg.StringPtr("not-an-ip"))}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("ip", kmsg.StringPtr("10.0.0.1"))}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("ip", nil), qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice), qc("user", nil)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("group", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", kmsg.StringPtr(""))}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1), qset("producer_byte_rate", 2)}},
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{{Key: "nope", Remove: true}}},
	}
	good := kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{qc("user", kmsg.StringPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{qset("consumer_byte_rate", 1000)}}
	res, err = adm.AlterClientQuotas(ctx, append(bad, good))
	if err != nil || len(res) != len(bad)+1 {
		t.Fatalf("alter bad entries: %v %+v", err, res)
	}
	for i, r := range res[:len(bad)] {
		if !errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage == "" {
			t.Errorf("bad entry %d %v: %v %q, want INVALID_REQUEST with a message", i, bad[i].Entity, r.Err, r.ErrMessage)
		}
		if len(r.Entity) != len(bad[i].Entity) {
			t.Errorf("bad entry %d: result entity %v, want %v echoed", i, r.Entity, bad[i].Entity)
		}
	}
	if r := res[len(bad)]; r.Err != nil {
		t.Errorf("the good entry beside bad ones: %v %s", r.Err, r.ErrMessage)
	}
	if got := describe(true, exact("user", "alice")); got != "user=alice{producer_byte_rate=1.048576e+06,request_percentage=12.5}" {
		t.Errorf("alice after refused changes: %s", got)
	}
	if got := describe(true, exact("user", "bob")); got != "user=bob{consumer_byte_rate=1000}" {
		t.Errorf("bob: %s", got)
	}

	// Removing keys; removing one never set is a success; an entity with
	// no key left is gone.
	res, err = adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("user", alice)}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Remove: true}, {Key: "consumer_byte_rate", Remove: true}}},
		{Entity: kadm.ClientQuotaEntity{qc("user", kmsg.StringPtr("bob"))}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Remove: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("remove %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	if got := describe(true, exact("user", "alice")); got != "user=alice{producer_byte_rate=1.048576e+06}" {
		t.Errorf("alice after removal: %s", got)
	}
	if got := describe(true, exact("user", "bob")); got != "" {
		t.Errorf("bob after removal: %s", got)
	}
}

// Without ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster a client gets
// CLUSTER_AUTHORIZATION_FAILED.
func TestClientQuotasNeedClusterConfigs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.AllowEveryoneIfNoACL = false
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	ctx := testCtx(t)
	// One ACL for somebody else: a cluster with none is open to all.
	if created, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:somebody-else").
		Topics("unrelated").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || created[0].Err != nil {
		t.Fatalf("create the one ACL: %v %+v", err, created)
	}
	_, err := adm.DescribeClientQuotas(ctx, false, nil)
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("describe: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("user", nil)}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", 1)}}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("alter: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, res)
	}
	if len(n.Membership().Quotas()) != 0 {
		t.Errorf("a refused alter changed the catalog: %+v", n.Membership().Quotas())
	}
}

// A quota altered through one node is described by another once gossip
// brought it, survives that node's restart (read from its catalog file),
// and a change made while it was down reaches it by anti-entropy.
func TestClientQuotasAcrossClusterAndRestart(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx := testCtx(t)
	alter := func(adm *kadm.Client, user string, v float64) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
			{Entity: kadm.ClientQuotaEntity{qc("user", kmsg.StringPtr(user))}, Ops: []kadm.AlterClientQuotaOp{qset("producer_byte_rate", v)}}})
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("alter %s: %v %+v", user, err, res)
		}
	}
	alter(newAdmin(t, nodes[0]), "alice", 1048576)
	adm3 := newAdmin(t, nodes[2])
	retry.Run(t, 20*time.Second, func() error {
		d, err := adm3.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			return err
		}
		if got := quotasString(d); got != "user=alice{producer_byte_rate=1.048576e+06}" {
			return fmt.Errorf("node 3 describes %q", got)
		}
		return nil
	})

	// And node 3 enforces it: its producers named alice find the quota.
	if a, ok := nodes[2].access.Quotas().Lookup(quota.Produce, "alice", "any-client"); !ok || a.Limit != 1048576 {
		t.Errorf("node 3 applies %+v (%v) to alice, want her 1 MiB/s", a, ok)
	}

	down := nodes[2]
	stopNode(t, down)
	alter(newAdmin(t, nodes[1]), "bob", 2048)
	cfg := down.cfg
	back := startNodeUnadmitted(t, cfg)
	// From its own file, before any peer could have told it.
	if q := back.Membership().Quotas(); len(q) == 0 || q[0].Entity.User.Name != "alice" || q[0].Value != 1048576 {
		t.Errorf("restarted node 3 holds %+v, want alice's quota from its file", q)
	}
	waitAdmitted(t, back)
	admBack := newAdmin(t, back)
	retry.Run(t, 20*time.Second, func() error {
		d, err := admBack.DescribeClientQuotas(ctx, false, nil)
		if err != nil {
			return err
		}
		if got := quotasString(d); got != "user=alice{producer_byte_rate=1.048576e+06} user=bob{producer_byte_rate=2048}" {
			return fmt.Errorf("restarted node 3 describes %q", got)
		}
		return nil
	})
}
