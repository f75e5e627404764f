package authz

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txn     = kmsg.ACLResourceTypeTransactionalId

	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed

	allow = kmsg.ACLPermissionTypeAllow
	deny  = kmsg.ACLPermissionTypeDeny

	opAll      = kmsg.ACLOperationAll
	read       = kmsg.ACLOperationRead
	write      = kmsg.ACLOperationWrite
	create     = kmsg.ACLOperationCreate
	del        = kmsg.ACLOperationDelete
	alter      = kmsg.ACLOperationAlter
	describe   = kmsg.ACLOperationDescribe
	describeC  = kmsg.ACLOperationDescribeConfigs
	alterC     = kmsg.ACLOperationAlterConfigs
	idempotent = kmsg.ACLOperationIdempotentWrite
)

func b(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

type check struct {
	principal, host string
	op              kmsg.ACLOperation
	rt              kmsg.ACLResourceType
	name            string
	want            bool
}

func run(t *testing.T, a *Authorizer, checks []check) {
	t.Helper()
	for _, c := range checks {
		if got := a.Authorize(c.principal, c.host, c.op, c.rt, c.name); got != c.want {
			t.Errorf("%s from %s: %v on %v %q = %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
		}
	}
}

func TestNoACLs(t *testing.T) {
	open := New(Config{AllowIfNoACL: true}, nil)
	if !open.Open() || !open.Authorize("User:x", "1.2.3.4", write, topic, "t") {
		t.Error("no ACLs with allow-everyone must allow all")
	}
	// With no ACL at all the default does not matter: everyone is
	// allowed (the quick start works)...
	if none := New(Config{AllowIfNoACL: false}, nil); !none.Open() || !none.Authorize("User:x", "1.2.3.4", write, topic, "t") {
		t.Error("no ACLs at all must allow all, whatever the default")
	}
	// ...and the first ACL, on another resource, closes what no ACL
	// allows, to all but the super users (Kafka's default).
	closed := New(Config{AllowIfNoACL: false, SuperUsers: []string{"User:root"}}, []Binding{b(topic, "other", literal, "User:alice", "*", read, allow)})
	run(t, closed, []check{
		{"User:x", "1.2.3.4", write, topic, "t", false},
		{"User:root", "1.2.3.4", write, topic, "t", true},
		{"User:alice", "1.2.3.4", read, topic, "other", true},
		{"User:alice", "1.2.3.4", read, topic, "t", false},
	})
	// With allow-everyone on, an ACL on one topic closes that topic only.
	a := New(Config{AllowIfNoACL: true}, []Binding{b(topic, "secret", literal, "User:alice", "*", read, allow)})
	if a.Open() {
		t.Error("open with an ACL")
	}
	run(t, a, []check{
		{"User:bob", "1.2.3.4", read, topic, "secret", false},
		{"User:alice", "1.2.3.4", read, topic, "secret", true},
		{"User:alice", "1.2.3.4", write, topic, "secret", false},
		{"User:bob", "1.2.3.4", write, topic, "public", true},
		{"User:bob", "1.2.3.4", read, group, "secret", true},
	})
}

func TestPatternsAndWildcards(t *testing.T) {
	a := New(Config{}, []Binding{
		b(topic, "orders-", prefixed, "User:alice", "*", write, allow),
		b(topic, "*", literal, "User:bob", "*", read, allow),
		b(group, "app", literal, "User:*", "*", read, allow),
		b(cluster, ClusterName, literal, "User:ops", "*", opAll, allow),
	})
	run(t, a, []check{
		{"User:alice", "h", write, topic, "orders-eu", true},
		{"User:alice", "h", write, topic, "orders", false},
		{"User:alice", "h", write, topic, "order-x", false},
		{"User:bob", "h", read, topic, "anything", true},
		{"User:bob", "h", write, topic, "anything", false},
		{"User:carol", "h", read, group, "app", true},
		{"User:carol", "h", read, group, "app2", false},
		{"Group:x", "h", read, group, "app", false}, // User:* matches users only
		{"User:ops", "h", create, cluster, ClusterName, true},
		{"User:ops", "h", alterC, cluster, ClusterName, true},
		{"User:ops", "h", create, topic, "x", false},
	})
}

func TestDenyWins(t *testing.T) {
	a := New(Config{SuperUsers: []string{"User:root"}}, []Binding{
		b(topic, "*", literal, "User:*", "*", opAll, allow),
		b(topic, "pay", prefixed, "User:mallory", "*", read, deny),
		b(topic, "audit", literal, "User:*", "10.0.0.9", opAll, deny),
		b(topic, "x", literal, "User:root", "*", opAll, deny),
	})
	run(t, a, []check{
		{"User:mallory", "1.1.1.1", read, topic, "payments", false},
		{"User:mallory", "1.1.1.1", write, topic, "payments", true}, // deny READ is not deny WRITE
		{"User:mallory", "1.1.1.1", describe, topic, "payments", true},
		{"User:alice", "1.1.1.1", read, topic, "payments", true},
		{"User:alice", "10.0.0.9", describe, topic, "audit", false},
		{"User:alice", "10.0.0.8", describe, topic, "audit", true},
		{"User:root", "1.1.1.1", read, topic, "x", true}, // super users skip ACLs
	})
}

func TestImpliedOperations(t *testing.T) {
	for _, op := range []kmsg.ACLOperation{read, write, del, alter} {
		a := New(Config{}, []Binding{b(topic, "t", literal, "User:u", "*", op, allow)})
		run(t, a, []check{{"User:u", "h", describe, topic, "t", true}, {"User:u", "h", op, topic, "t", true},
			{"User:u", "h", describeC, topic, "t", false}})
	}
	a := New(Config{}, []Binding{b(topic, "t", literal, "User:u", "*", alterC, allow)})
	run(t, a, []check{{"User:u", "h", describeC, topic, "t", true}, {"User:u", "h", describe, topic, "t", false}})
	a = New(Config{}, []Binding{b(topic, "t", literal, "User:u", "*", describe, allow)})
	run(t, a, []check{{"User:u", "h", read, topic, "t", false}})
	// A DENY of READ does not deny DESCRIBE, which WRITE still implies.
	a = New(Config{}, []Binding{b(topic, "t", literal, "User:u", "*", write, allow), b(topic, "t", literal, "User:u", "*", read, deny)})
	run(t, a, []check{{"User:u", "h", describe, topic, "t", true}})
}

func TestHosts(t *testing.T) {
	a := New(Config{}, []Binding{
		b(topic, "t", literal, "User:u", "127.0.0.1", read, allow),
		b(topic, "t", literal, "User:u", "::1", write, allow),
	})
	run(t, a, []check{
		{"User:u", "127.0.0.1", read, topic, "t", true},
		{"User:u", "::ffff:127.0.0.1", read, topic, "t", true},
		{"User:u", "127.0.0.2", read, topic, "t", false},
		{"User:u", "0:0:0:0:0:0:0:1", write, topic, "t", true},
		{"User:u", "127.0.0.1", write, topic, "t", false},
	})
}

func TestAuthorizeAny(t *testing.T) {
	cases := []struct {
		name     string
		acls     []Binding
		allowAll bool
		want     bool
	}{
		{"no ACLs, default allow", nil, true, true},
		{"no ACLs at all, default deny: open", nil, false, true},
		{"an ACL on another resource type, default deny", []Binding{b(group, "g", literal, "User:u", "*", read, allow)}, false, false},
		{"an ACL on another resource type, default allow", []Binding{b(group, "g", literal, "User:u", "*", read, allow)}, true, true},
		{"literal write", []Binding{b(topic, "t", literal, "User:u", "*", write, allow)}, false, true},
		{"literal write denied", []Binding{b(topic, "t", literal, "User:u", "*", write, allow), b(topic, "t", literal, "User:u", "*", write, deny)}, false, false},
		{"prefix write under a wider deny", []Binding{b(topic, "ab", prefixed, "User:u", "*", write, allow), b(topic, "a", prefixed, "User:u", "*", opAll, deny)}, false, false},
		{"wildcard deny", []Binding{b(topic, "t", literal, "User:u", "*", write, allow), b(topic, "*", literal, "User:*", "*", write, deny)}, true, false},
		{"read only", []Binding{b(topic, "t", literal, "User:u", "*", read, allow)}, false, false},
		{"other user", []Binding{b(topic, "t", literal, "User:v", "*", write, allow)}, false, false},
	}
	for _, c := range cases {
		a := New(Config{AllowIfNoACL: c.allowAll}, c.acls)
		if got := a.AuthorizeAny("User:u", "h", write, topic); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !New(Config{SuperUsers: []string{"User:u"}}, nil).AuthorizeAny("User:u", "h", idempotent, cluster) {
		t.Error("a super user may write")
	}
}

func TestFilters(t *testing.T) {
	name := func(s string) *string { return &s }
	acls := []Binding{
		b(topic, "orders", literal, "User:a", "*", read, allow),
		b(topic, "*", literal, "User:b", "*", read, allow),
		b(topic, "ord", prefixed, "User:c", "*", write, deny),
		b(group, "orders", literal, "User:a", "*", read, allow),
		b(txn, "tx", literal, "User:a", "1.2.3.4", write, allow),
	}
	cases := []struct {
		name string
		f    Filter
		want int
	}{
		{"all", Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 5},
		{"topic literal orders", Filter{ResourceType: topic, ResourceName: name("orders"), PatternType: literal, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{"topic match orders", Filter{ResourceType: topic, ResourceName: name("orders"), PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 3},
		{"any name orders", Filter{ResourceType: kmsg.ACLResourceTypeAny, ResourceName: name("orders"), PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 2},
		{"prefixed", Filter{ResourceType: topic, PatternType: prefixed, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, 1},
		{"deny", Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: deny}, 1},
		{"principal and host", Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: name("User:a"), Host: name("1.2.3.4"), Operation: write, Permission: kmsg.ACLPermissionTypeAny}, 1},
	}
	for _, c := range cases {
		n := 0
		for _, a := range acls {
			if c.f.Matches(a) {
				n++
			}
		}
		if n != c.want || !c.f.Valid() {
			t.Errorf("%s: %d matched (valid %v), want %d", c.name, n, c.f.Valid(), c.want)
		}
	}
}

// The check a cluster without ACLs makes on every produce and fetch.
func BenchmarkOpen(b *testing.B) {
	a := New(Config{AllowIfNoACL: true}, nil)
	for i := 0; i < b.N; i++ {
		if !a.Open() {
			b.Fatal("closed")
		}
	}
}

func BenchmarkAuthorize100ACLs(bm *testing.B) {
	var acls []Binding
	for i := 0; i < 100; i++ {
		acls = append(acls, b(topic, string(rune('a'+i%26))+"-topic", literal, "User:u", "*", read, allow))
	}
	acls = append(acls, b(topic, "a-", prefixed, "User:u", "*", write, allow))
	a := New(Config{}, acls)
	for i := 0; i < bm.N; i++ {
		a.Authorize("User:u", "127.0.0.1", read, topic, "a-topic")
	}
}
