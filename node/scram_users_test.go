package node

// Cluster-wide SCRAM users end to end: a user created through one node
// with AlterUserScramCredentials authenticates on another node's SASL
// listener, is described everywhere, and once deleted authenticates
// nowhere.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/sasl"
)

// startSASLCluster is a 3-node cluster whose nodes each have a
// SASL_PLAINTEXT listener "SASL" beside the PLAINTEXT main one, and a
// bootstrap user admin (password "admin-pw").
func startSASLCluster(t *testing.T) []*Node {
	return startClusterWith(t, 3, func(c *Config) {
		c.KafkaListenerName = "INTERNAL"
		c.Listeners = []Listener{{Name: "SASL", Addr: "127.0.0.1:0", Protocol: SASLPlaintext}}
		c.SASL.Mechanisms = []string{sasl.ScramSHA256, sasl.ScramSHA512}
		c.SASL.BootstrapUser, c.SASL.BootstrapPassword = "admin", "admin-pw"
	})
}

// scramLogin connects to n's SASL listener as user with SCRAM-SHA-512 (or
// 256) and asks for metadata, which needs the authentication to pass.
func scramLogin(t *testing.T, n *Node, user, pass string, sha256 bool) error {
	t.Helper()
	mech := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	if sha256 {
		mech = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.ListenerAddrs()["SASL"]), kgo.SASL(mech),
		kgo.RetryTimeout(time.Second), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).BrokerMetadata(ctx)
	return err
}

func TestScramUsersAcrossCluster(t *testing.T) {
	nodes := startSASLCluster(t)
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	adm1, adm2 := newAdmin(t, n1), newAdmin(t, n2)
	ctx := testCtx(t)

	altered, err := adm1.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-pw"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("create carol through node 1: %v %v", err, altered.Error())
	}
	retry.Run(t, 20*time.Second, func() error {
		return scramLogin(t, n3, "carol", "carol-pw", false)
	})
	if err := scramLogin(t, n3, "carol", "wrong", false); err == nil {
		t.Error("node 3 took carol with a wrong password")
	}
	if err := scramLogin(t, n3, "carol", "carol-pw", true); err == nil {
		t.Error("node 3 took carol over SCRAM-SHA-256, which she has no credential for")
	}
	if err := scramLogin(t, n1, "admin", "admin-pw", false); err != nil {
		t.Errorf("the bootstrap user beside the cluster's: %v", err)
	}
	// A node's own user wins over the cluster's of the same name and
	// mechanism: a client cannot take the bootstrap user over.
	altered, err = adm1.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "taken-over"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("upsert admin: %v %v", err, altered.Error())
	}
	retry.Run(t, 20*time.Second, func() error {
		if len(n3.Membership().Users()) != 2 {
			return fmt.Errorf("node 3 holds %d cluster users, want carol and admin", len(n3.Membership().Users()))
		}
		return nil
	})
	if err := scramLogin(t, n3, "admin", "taken-over", false); err == nil {
		t.Error("the cluster's admin credential won over node 3's bootstrap user")
	}
	if err := scramLogin(t, n3, "admin", "admin-pw", false); err != nil {
		t.Errorf("node 3's bootstrap user after a cluster upsert of admin: %v", err)
	}

	// Describe, on another node than the one that made the user.
	retry.Run(t, 20*time.Second, func() error {
		d, err := adm2.DescribeUserSCRAMs(ctx)
		if err != nil {
			return err
		}
		c, ok := d["carol"]
		if _, admin := d["admin"]; !admin || len(d) != 2 {
			return fmt.Errorf("described %+v, want admin and carol", d)
		}
		if !ok || len(c.CredInfos) != 1 || c.CredInfos[0].Mechanism != kadm.ScramSha512 || c.CredInfos[0].Iterations != 8192 {
			return fmt.Errorf("described %+v", d)
		}
		return nil
	})
	d, err := adm2.DescribeUserSCRAMs(ctx, "nobody")
	if err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describe an unknown user: %v %+v, want RESOURCE_NOT_FOUND", err, d)
	}

	// Refusals, each with Kafka's error.
	refused := map[string]struct {
		del    []kadm.DeleteSCRAM
		upsert []kadm.UpsertSCRAM
		want   error
	}{
		"twice": {upsert: []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "x"}},
			del: []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, want: kerr.DuplicateResource},
		"delete unknown": {del: []kadm.DeleteSCRAM{{User: "dave", Mechanism: kadm.ScramSha256}}, want: kerr.ResourceNotFound},
	}
	for name, c := range refused {
		r, err := adm1.AlterUserSCRAMs(ctx, c.del, c.upsert)
		if err != nil || !errors.Is(r["dave"].Err, c.want) {
			t.Errorf("%s: %v %+v, want %v", name, err, r, c.want)
		}
	}
	// What kadm refuses before sending, as a raw request.
	for _, c := range []struct {
		mechanism  int8
		iterations int32
		want       *kerr.Error
	}{{2, 4095, kerr.UnacceptableCredential}, {2, 16385, kerr.UnacceptableCredential}, {3, 8192, kerr.UnsupportedSaslMechanism}} {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "dave", c.mechanism, c.iterations, []byte("salt"), []byte("salted")
		req.Upsertions = append(req.Upsertions, up)
		resp, err := req.RequestWith(ctx, newClient(t, n1))
		if err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != c.want.Code {
			t.Errorf("mechanism %d iterations %d: %v %+v, want %v", c.mechanism, c.iterations, err, resp, c.want)
		}
	}
	if d, err := adm1.DescribeUserSCRAMs(ctx, "dave"); err != nil || !errors.Is(d["dave"].Err, kerr.ResourceNotFound) {
		t.Errorf("a refused alteration made dave: %v %+v", err, d)
	}

	// Deleted through node 2: no node takes carol any more.
	altered, err = adm2.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "carol", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || altered.Error() != nil {
		t.Fatalf("delete carol through node 2: %v %v", err, altered.Error())
	}
	for _, n := range []*Node{n1, n2, n3} {
		retry.Run(t, 20*time.Second, func() error {
			if scramLogin(t, n, "carol", "carol-pw", false) == nil {
				return fmt.Errorf("node %d still takes carol", n.NodeID())
			}
			return nil
		})
	}
}
