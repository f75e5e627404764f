package node

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/sasl"
)

// TestTxnACLs: a transactional producer needs WRITE on its transactional
// id (prefixed ACLs work) as well as on the topic; one without it is
// refused at InitProducerId with Kafka's error and writes nothing.
func TestTxnACLs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.KafkaListenerName = "INTERNAL"
	cfg.Listeners = []Listener{{Name: "SASL", Addr: "127.0.0.1:0", Protocol: SASLPlaintext}}
	cfg.SASL.Mechanisms = []string{sasl.ScramSHA512}
	cfg.SASL.BootstrapUser, cfg.SASL.BootstrapPassword = "admin", "admin-pw"
	cfg.SuperUsers = []string{"User:admin"}
	cfg.AllowEveryoneIfNoACL = false
	n := startNode(t, cfg)
	ctx := testCtx(t)
	adm := kadm.NewClient(scramClient(t, n, "admin", "admin-pw"))
	if r, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-pw"},
	}); err != nil || r.Error() != nil {
		t.Fatalf("create alice: %v %v", err, r.Error())
	}
	createTopic(t, adm, "orders", 1, nil)
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe).
			ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:alice").TransactionalIDs("app-").Operations(kadm.OpWrite, kadm.OpDescribe).
			ResourcePatternType(kadm.ACLPatternPrefixed),
		// The test's reader, on the plaintext listener.
		kadm.NewACLs().Allow("User:ANONYMOUS").Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe).
			ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range acls {
		if created, err := adm.CreateACLs(ctx, b); err != nil || created[0].Err != nil {
			t.Fatalf("create ACL: %v %+v", err, created)
		}
	}

	allowed := scramClient(t, n, "alice", "alice-pw", kgo.TransactionalID("app-1"), kgo.DefaultProduceTopic("orders"))
	if err := txnProduce(t, ctx, allowed, "orders", "ok", 5, true); err != nil {
		t.Fatalf("alice with transactional id app-1: %v", err)
	}

	denied := scramClient(t, n, "alice", "alice-pw", kgo.TransactionalID("other-1"), kgo.DefaultProduceTopic("orders"))
	err := txnProduce(t, ctx, denied, "orders", "no", 5, true)
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("alice with transactional id other-1: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}

	got := readKeys(t, n, "orders", 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if len(got) != 5 {
		t.Fatalf("read_committed saw %d keys, want the 5 of app-1: %v", len(got), got)
	}
	for k := range got {
		if k[:2] != "ok" {
			t.Fatalf("read_committed saw %q, a record of the refused producer", k)
		}
	}
}
