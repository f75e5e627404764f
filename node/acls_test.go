package node

// ACLs end to end with franz-go: bindings made through one node with
// kadm are enforced on another once the catalog has spread them, deny and
// allow behave as Kafka's, and the ACL APIs themselves are guarded.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/internal/testcerts"
	"github.com/spool-log/spool/node/sasl"
)

func scramClient(t *testing.T, n *Node, user, pass string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newClient(t, n, append([]kgo.Opt{kgo.SeedBrokers(n.ListenerAddrs()["SASL"]),
		kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()), kgo.RequestRetries(1),
		kgo.RetryTimeout(2 * time.Second)}, opts...)...)
}

// produceOne produces one record synchronously and returns its error.
func produceOne(t *testing.T, cl *kgo.Client, topic, value string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr()
}

func TestACLsAcrossCluster(t *testing.T) {
	nodes := startClusterWith(t, 2, func(c *Config) {
		c.KafkaListenerName = "INTERNAL"
		c.Listeners = []Listener{{Name: "SASL", Addr: "127.0.0.1:0", Protocol: SASLPlaintext}}
		c.SASL.Mechanisms = []string{sasl.ScramSHA512}
		c.SASL.BootstrapUser, c.SASL.BootstrapPassword = "admin", "admin-pw"
		c.SuperUsers = []string{"User:admin"}
	})
	n1, n2 := nodes[0], nodes[1]
	ctx := testCtx(t)
	anon := newAdmin(t, n1) // PLAINTEXT: User:ANONYMOUS
	if r, err := anon.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-pw"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-pw"},
	}); err != nil || r.Error() != nil {
		t.Fatalf("create users before any ACL (everyone allowed): %v %v", err, r.Error())
	}
	createTopic(t, anon, "secret", 1, nil)
	createTopic(t, anon, "public", 1, nil)

	admin1 := kadm.NewClient(scramClient(t, n1, "admin", "admin-pw"))
	created, err := admin1.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("secret").
		Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range created {
		if c.Err != nil {
			t.Fatalf("create %+v: %v", c, c.Err)
		}
	}
	if created, err = admin1.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Groups("app-").
		Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil || created[0].Err != nil {
		t.Fatalf("prefixed group ACL: %v %+v", err, created)
	}
	// The cluster resource gets an ACL too: from now on only admin (a
	// super user) and alice (DESCRIBE) may use the cluster's APIs.
	if created, err = admin1.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Clusters().
		Operations(kadm.OpDescribe)); err != nil || created[0].Err != nil {
		t.Fatalf("cluster ACL: %v %+v", err, created)
	}

	// On node 2, once the catalog brought all four (each travels on its
	// own, in any order): bob may not touch secret. His producer is not
	// idempotent, so the produce itself is judged: an idempotent one is
	// refused at InitProducerId (CLUSTER_AUTHORIZATION_FAILED: no WRITE
	// anywhere), or not, if it got its id before the ACLs arrived.
	waitBindings(t, n2, 4)
	bob2 := scramClient(t, n2, "bob", "bob-pw", kgo.DisableIdempotentWrite())
	if err := produceOne(t, bob2, "secret", "bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob produces to secret on node 2: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	alice2 := scramClient(t, n2, "alice", "alice-pw", kgo.ConsumeTopics("secret"),
		kgo.ConsumerGroup("app-1"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := produceOne(t, alice2, "secret", "alice"); err != nil {
		t.Fatalf("alice produces to secret on node 2: %v", err)
	}
	// Kafka's default: once the cluster has ACLs, a topic no ACL
	// allows is closed to all but the super users.
	if err := produceOne(t, bob2, "public", "bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("bob produces to public (no ACL on it, the cluster has ACLs): %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	fetchCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	fs := alice2.PollRecords(fetchCtx, 10)
	cancel()
	if err := fs.Err0(); err != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "alice" {
		t.Fatalf("alice consumes secret in group app-1: %v %d records", fs.Err0(), len(fs.Records()))
	}
	if err := alice2.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("alice commits in app-1: %v", err)
	}

	// Metadata hides secret from bob, not from alice.
	bobAdm := kadm.NewClient(bob2)
	topics, err := bobAdm.ListTopics(ctx)
	if err != nil || topics.Has("secret") || topics.Has("public") {
		t.Errorf("bob lists %v (%v), want neither secret nor public", topics.Names(), err)
	}
	topics, err = kadm.NewClient(alice2).ListTopics(ctx)
	if err != nil || !topics.Has("secret") {
		t.Errorf("alice lists %v (%v), want secret", topics.Names(), err)
	}
	// Alice's authorized operations on secret: what her ACLs give,
	// DESCRIBE implied by them.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.IncludeTopicAuthorizedOperations = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("secret")
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, alice2)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("alice's metadata of secret: %v", err)
	}
	ops := kadm.DecodeACLOperations(mresp.Topics[0].AuthorizedOperations)
	if !slices.Equal(ops, []kadm.ACLOperation{kadm.OpRead, kadm.OpWrite, kadm.OpDescribe}) {
		t.Errorf("alice's authorized operations on secret: %v, want READ, WRITE, DESCRIBE", ops)
	}
	// Bob may not read secret, nor use alice's group, nor manage ACLs.
	bobRead := scramClient(t, n2, "bob", "bob-pw", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secret": {0: kgo.NewOffset().AtStart()}}))
	fetchCtx, cancel = context.WithTimeout(ctx, 10*time.Second)
	fs = bobRead.PollRecords(fetchCtx, 10)
	cancel()
	if len(fs.Records()) != 0 {
		t.Errorf("bob read %d records of secret", len(fs.Records()))
	}
	if !slices.ContainsFunc(fs.Errors(), func(e kgo.FetchError) bool { return errors.Is(e.Err, kerr.TopicAuthorizationFailed) }) {
		t.Errorf("bob's fetch errors %v, want TOPIC_AUTHORIZATION_FAILED", fs.Errors())
	}
	if _, err := bobAdm.FetchOffsets(ctx, "app-1"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("bob fetches app-1's offsets: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	if d, err := bobAdm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)); err != nil || len(d) != 1 || !errors.Is(d[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("bob describes ACLs: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, d)
	}
	if r, err := anon.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("secret").Operations(kadm.OpRead)); err != nil || !errors.Is(r[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("anonymous creates an ACL: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
	}
	if _, err := anon.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("anonymous describes users: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}

	// Describe on node 2 shows what node 1 made; a deny there wins over
	// the allow, and the delete travels back to node 1.
	admin2 := kadm.NewClient(scramClient(t, n2, "admin", "admin-pw"))
	described, err := admin2.DescribeACLs(ctx, kadm.NewACLs().Topics("secret").Allow().AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil || len(described) != 1 || described[0].Err != nil || len(described[0].Described) != 2 {
		t.Fatalf("describe secret's ACLs on node 2: %v %+v, want alice's READ and WRITE", err, described)
	}
	if created, err = admin2.CreateACLs(ctx, kadm.NewACLs().Deny("User:alice").Topics("sec").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil || created[0].Err != nil {
		t.Fatalf("deny: %v %+v", err, created)
	}
	// With the deny no topic is left that alice may write, so her
	// idempotent producer is refused at InitProducerId, as Kafka refuses
	// IDEMPOTENT_WRITE without a WRITE on some topic that no deny takes
	// back (with allow-everyone on, an unnamed topic would still allow it
	// and the produce itself would be refused).
	// Her client asks for its producer id once, so only after node 1 has
	// the deny.
	waitBindings(t, n1, 5)
	alice1 := scramClient(t, n1, "alice", "alice-pw")
	retry.Run(t, 20*time.Second, func() error {
		if err := produceOne(t, alice1, "secret", "x"); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
			return fmt.Errorf("alice produces on node 1 after a prefixed deny: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
		}
		return nil
	})
	deleted, err := admin2.DeleteACLs(ctx, kadm.NewACLs().Deny("User:alice").DenyHosts().Topics("sec").Operations().ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(deleted) != 1 || len(deleted[0].Deleted) != 1 {
		t.Fatalf("delete the deny: %v %+v", err, deleted)
	}
	// A new producer: franz-go keeps the refused InitProducerId's error.
	retry.Run(t, 20*time.Second, func() error {
		return produceOne(t, scramClient(t, n1, "alice", "alice-pw"), "secret", "again")
	})
}

// On an mTLS listener without SASL the principal is the client
// certificate's subject, User:CN=..., as Kafka's default principal
// builder makes it; a super user named so is allowed everything.
func TestACLCertificatePrincipal(t *testing.T) {
	s := startSecureNode(t, func(c *Config) {
		c.Listeners = append(c.Listeners, Listener{Name: "MTLS", Addr: "127.0.0.1:0", Protocol: SSL})
		c.SuperUsers = []string{"User:CN=root-client"}
	})
	ctx := testCtx(t)
	anon := newAdmin(t, s.Node)
	createTopic(t, anon, "certs", 1, nil)
	if err := produceOne(t, newClient(t, s.Node), "certs", "v"); err != nil {
		t.Fatal(err)
	}
	if r, err := anon.CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=reader").Topics("certs").Operations(kadm.OpRead)); err != nil || r[0].Err != nil {
		t.Fatalf("create ACL: %v %+v", err, r)
	}
	read := func(cn string) error {
		cl := s.clientWith(t, testcerts.ClientConfig(s.ca, s.clientCA.Client(t, cn).TLS(t)), nil,
			kgo.SeedBrokers(s.ListenerAddrs()["MTLS"]), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"certs": {0: kgo.NewOffset().AtStart()}}))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		fs := cl.PollFetches(pctx)
		if err := fs.Err0(); err != nil {
			return err
		}
		if fs.NumRecords() != 1 {
			return fmt.Errorf("%d records", fs.NumRecords())
		}
		return nil
	}
	if err := read("reader"); err != nil {
		t.Errorf("CN=reader reads: %v", err)
	}
	if err := read("root-client"); err != nil {
		t.Errorf("the super user CN=root-client reads: %v", err)
	}
	if err := read("other"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("CN=other reads: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
}

// With --allow-everyone-if-no-acl-found (Kafka's
// allow.everyone.if.no.acl.found=true) an ACL on one topic closes that
// topic only; without it (the default) every topic no ACL allows closes
// with the first ACL, and a cluster with none is open to all.
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			cfg.KafkaListenerName = "INTERNAL"
			cfg.Listeners = []Listener{{Name: "SASL", Addr: "127.0.0.1:0", Protocol: SASLPlaintext}}
			cfg.SASL.Mechanisms = []string{sasl.ScramSHA512}
			cfg.SASL.BootstrapUser, cfg.SASL.BootstrapPassword = "admin", "admin-pw"
			cfg.SuperUsers = []string{"User:admin"}
			cfg.AllowEveryoneIfNoACL = allow
			n := startNode(t, cfg)
			ctx := testCtx(t)
			anon := newAdmin(t, n)
			if r, err := anon.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
				{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-pw"},
				{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-pw"},
			}); err != nil || r.Error() != nil {
				t.Fatalf("create users before any ACL (everyone allowed): %v %v", err, r.Error())
			}
			createTopic(t, anon, "a", 1, nil)
			createTopic(t, anon, "b", 1, nil)
			bob := scramClient(t, n, "bob", "bob-pw")
			if err := produceOne(t, bob, "b", "before"); err != nil {
				t.Fatalf("bob produces to b with no ACL in the cluster: %v", err)
			}
			admin := kadm.NewClient(scramClient(t, n, "admin", "admin-pw"))
			if created, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("a").
				Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil || created[0].Err != nil {
				t.Fatalf("ACL for alice on a: %v %+v", err, created)
			}
			err := produceOne(t, bob, "b", "after")
			switch {
			case allow && err != nil:
				t.Errorf("bob produces to b (no ACL on it, allow-everyone on): %v", err)
			case !allow && !errors.Is(err, kerr.TopicAuthorizationFailed):
				t.Errorf("bob produces to b once alice has an ACL on a: %v, want TOPIC_AUTHORIZATION_FAILED", err)
			}
			if err := produceOne(t, bob, "a", "bob"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("bob produces to a (alice's): %v, want TOPIC_AUTHORIZATION_FAILED", err)
			}
			if err := produceOne(t, scramClient(t, n, "admin", "admin-pw"), "b", "admin"); err != nil {
				t.Errorf("a super user produces to b: %v", err)
			}
		})
	}
}

// waitBindings waits until n's catalog holds want ACL bindings.
func waitBindings(t *testing.T, n *Node, want int) {
	t.Helper()
	retry.Run(t, 20*time.Second, func() error {
		if got := len(n.access.Bindings()); got != want {
			return fmt.Errorf("node %d holds %d ACL bindings, want %d", n.NodeID(), got, want)
		}
		return nil
	})
}
