package integration

// The ACL APIs as the admin clients people use send them, against a real
// `spool node` process: sarama's ClusterAdmin and kafka-go's Client each
// create, describe and delete ACLs, checked with franz-go's kadm.
// confluent-kafka-python's AdminClient is not tested: the installed
// Debian package (1.7.0) predates its ACL API (1.8).

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

// describeAllACLs lists every ACL with franz-go, as "TYPE NAME PATTERN
// PRINCIPAL HOST OPERATION PERMISSION" lines.
func describeAllACLs(t *testing.T, addr string) []string {
	t.Helper()
	adm := kadm.NewClient(franzClient(t, addr))
	res, err := adm.DescribeACLs(ctxTimeout(t, 10*time.Second), kadm.NewACLs().AnyResource().Allow().AllowHosts().
		Deny().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("franz-go describe ACLs: %v", r.Err)
		}
		for _, d := range r.Described {
			out = append(out, d.Type.String()+" "+d.Name+" "+d.Pattern.String()+" "+d.Principal+" "+d.Host+" "+d.Operation.String()+" "+d.Permission.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestACLAdminSarama(t *testing.T) {
	// The admin API's clients are anonymous: once the first ACL exists,
	// only the allow-everyone default leaves them the cluster resource.
	n := StartNode(t, WithArgs("--allow-everyone-if-no-acl-found"))
	cfg := saramaConfig("none")
	admin, err := sarama.NewClusterAdmin([]string{n.KafkaAddr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "sarama-t", ResourcePatternType: sarama.AclPatternLiteral}
	if err := admin.CreateACL(res, sarama.Acl{Principal: "User:sarama", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}); err != nil {
		t.Fatalf("sarama CreateACL: %v", err)
	}
	grp := sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: "app-", ResourcePatternType: sarama.AclPatternPrefixed}
	if err := admin.CreateACL(grp, sarama.Acl{Principal: "User:sarama", Host: "10.0.0.1", Operation: sarama.AclOperationDescribe, PermissionType: sarama.AclPermissionDeny}); err != nil {
		t.Fatalf("sarama CreateACL prefixed: %v", err)
	}
	if got := describeAllACLs(t, n.KafkaAddr); !slices.Equal(got, []string{
		"GROUP app- PREFIXED User:sarama 10.0.0.1 DESCRIBE DENY", "TOPIC sarama-t LITERAL User:sarama * READ ALLOW"}) {
		t.Fatalf("after sarama's creates: %q", got)
	}
	name := "sarama-t"
	listed, err := admin.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternMatch, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil || len(listed) != 1 || len(listed[0].Acls) != 1 || listed[0].Acls[0].Principal != "User:sarama" {
		t.Fatalf("sarama ListAcls: %v %+v", err, listed)
	}
	principal := "User:sarama"
	deleted, err := admin.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceAny, Principal: &principal,
		ResourcePatternTypeFilter: sarama.AclPatternAny, Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionDeny}, false)
	if err != nil || len(deleted) != 1 || deleted[0].ResourceName != "app-" {
		t.Fatalf("sarama DeleteACL: %v %+v", err, deleted)
	}
	if got := describeAllACLs(t, n.KafkaAddr); len(got) != 1 {
		t.Fatalf("after sarama's delete: %q", got)
	}
}

func TestACLAdminKafkaGo(t *testing.T) {
	// The admin API's clients are anonymous: once the first ACL exists,
	// only the allow-everyone default leaves them the cluster resource.
	n := StartNode(t, WithArgs("--allow-everyone-if-no-acl-found"))
	cl := &kafka.Client{Addr: kafka.TCP(n.KafkaAddr), Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := cl.CreateACLs(ctx, &kafka.CreateACLsRequest{ACLs: []kafka.ACLEntry{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: "kgo-t", ResourcePatternType: kafka.PatternTypeLiteral,
			Principal: "User:kgo", Host: "*", Operation: kafka.ACLOperationTypeWrite, PermissionType: kafka.ACLPermissionTypeAllow},
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: "kgo-", ResourcePatternType: kafka.PatternTypePrefixed,
			Principal: "User:*", Host: "*", Operation: kafka.ACLOperationTypeDescribe, PermissionType: kafka.ACLPermissionTypeAllow},
	}})
	if err != nil {
		t.Fatalf("kafka-go CreateACLs: %v", err)
	}
	for _, e := range created.Errors {
		if e != nil {
			t.Fatalf("kafka-go CreateACLs: %v", e)
		}
	}
	if got := describeAllACLs(t, n.KafkaAddr); !slices.Equal(got, []string{
		"TOPIC kgo- PREFIXED User:* * DESCRIBE ALLOW", "TOPIC kgo-t LITERAL User:kgo * WRITE ALLOW"}) {
		t.Fatalf("after kafka-go's creates: %q", got)
	}
	described, err := cl.DescribeACLs(ctx, &kafka.DescribeACLsRequest{Filter: kafka.ACLFilter{
		ResourceTypeFilter: kafka.ResourceTypeTopic, ResourceNameFilter: "kgo-t", ResourcePatternTypeFilter: kafka.PatternTypeMatch,
		Operation: kafka.ACLOperationTypeAny, PermissionType: kafka.ACLPermissionTypeAny}})
	if err != nil || described.Error != nil || len(described.Resources) != 2 {
		t.Fatalf("kafka-go DescribeACLs (match kgo-t: both): %v %+v", err, described)
	}
	deleted, err := cl.DeleteACLs(ctx, &kafka.DeleteACLsRequest{Filters: []kafka.DeleteACLsFilter{{
		ResourceTypeFilter: kafka.ResourceTypeTopic, ResourceNameFilter: "kgo-t", ResourcePatternTypeFilter: kafka.PatternTypeLiteral,
		PrincipalFilter: "User:kgo", HostFilter: "*", Operation: kafka.ACLOperationTypeAny, PermissionType: kafka.ACLPermissionTypeAny}}})
	if err != nil || len(deleted.Results) != 1 || deleted.Results[0].Error != nil || len(deleted.Results[0].MatchingACLs) != 1 {
		t.Fatalf("kafka-go DeleteACLs: %v %+v", err, deleted)
	}
	if got := describeAllACLs(t, n.KafkaAddr); !slices.Equal(got, []string{"TOPIC kgo- PREFIXED User:* * DESCRIBE ALLOW"}) {
		t.Fatalf("after kafka-go's delete: %q", got)
	}
}
