package node

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

// AlterUserScramCredentials: v0
//
// Behavior:
// * Deletes and upserts SCRAM credentials of the cluster's users (the
//   membership catalog: saved on this node, then spread by gossip and
//   anti-entropy to every node). An upsertion carries the salt, the
//   iteration count and the salted password, as Kafka's protocol has the
//   client compute it; the broker derives StoredKey and ServerKey and
//   keeps only those. One result per user, in order of first mention;
//   a user's alterations are all checked before any is made.
// * Errors per user: UNACCEPTABLE_CREDENTIAL for an empty or invalid name,
//   an empty salt or salted password, or iterations outside 4096..16384
//   (Kafka's bounds); UNSUPPORTED_SASL_MECHANISM for a mechanism other
//   than SCRAM-SHA-256/512; DUPLICATE_RESOURCE when one user and mechanism
//   are altered twice in the request (as Kafka: both mechanisms of a user
//   may be set in one request); RESOURCE_NOT_FOUND for a deletion of a
//   credential that does not exist; KAFKA_STORAGE_ERROR when the catalog
//   cannot be saved (nothing changed for that user: retry).
// * Authorization: ALTER on the cluster, else every user's result is
//   CLUSTER_AUTHORIZATION_FAILED. A credential the node's credentials file or bootstrap
//   user defines for the same user and mechanism still wins on that node
//   (node/sasl/users.go).
//
// Version notes:
// * v0: flexible versions (the only version)

// scramAlteration is one deletion (cred nil) or upsertion of a request.
type scramAlteration struct {
	mechanism string
	cred      *sasl.ScramCredential
}

func (n *Node) handleAlterUserScramCredentials(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var order []string
	alters := map[string][]scramAlteration{}
	failed := map[string]*kerr.Error{}
	messages := map[string]string{}
	fail := func(user string, err *kerr.Error, msg string) {
		if failed[user] == nil {
			failed[user], messages[user] = err, msg
		}
	}
	seen := map[[2]string]bool{}
	note := func(user string, code int8) (string, bool) {
		if _, ok := alters[user]; !ok && failed[user] == nil {
			order = append(order, user)
		}
		if alters[user] == nil {
			alters[user] = []scramAlteration{}
		}
		mech, ok := scramMechanismName(code)
		if !ok {
			fail(user, kerr.UnsupportedSaslMechanism, "unknown SCRAM mechanism")
			return "", false
		}
		if seen[[2]string{user, mech}] {
			failed[user], messages[user] = kerr.DuplicateResource, "a user credential cannot be altered twice in the same request"
			return "", false
		}
		seen[[2]string{user, mech}] = true
		if membership.ValidateUserName(user) != nil {
			fail(user, kerr.UnacceptableCredential, "user name must be 1 to 256 bytes with no spaces or control characters")
			return "", false
		}
		return mech, true
	}
	denied := !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlter)
	for _, d := range req.Deletions {
		if mech, ok := note(d.Name, d.Mechanism); ok {
			alters[d.Name] = append(alters[d.Name], scramAlteration{mechanism: mech})
		}
	}
	for _, u := range req.Upsertions {
		mech, ok := note(u.Name, u.Mechanism)
		if !ok {
			continue
		}
		if u.Iterations < sasl.MinIteration || u.Iterations > sasl.MaxIteration {
			fail(u.Name, kerr.UnacceptableCredential, "iterations must be between 4096 and 16384")
			continue
		}
		cred, err := sasl.CredentialFromSalted(mech, u.Salt, u.SaltedPassword, int(u.Iterations))
		if err != nil {
			fail(u.Name, kerr.UnacceptableCredential, "salt and salted password must not be empty")
			continue
		}
		alters[u.Name] = append(alters[u.Name], scramAlteration{mechanism: mech, cred: &cred})
	}
	for _, user := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		if denied {
			r.ErrorCode, r.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr("ALTER on the cluster is needed to alter users")
		} else if err := failed[user]; err != nil {
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(messages[user])
		} else if err, msg := n.alterScramUser(user, alters[user]); err != nil {
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// alterScramUser makes one user's checked alterations, deletions first
// checked to exist so that a missing one fails the user before anything
// is made.
func (n *Node) alterScramUser(user string, alters []scramAlteration) (*kerr.Error, string) {
	live := map[string]bool{}
	for _, u := range n.agent.Users() {
		if u.Name == user {
			live[u.Mechanism] = true
		}
	}
	for _, a := range alters {
		if a.cred == nil && !live[a.mechanism] {
			return kerr.ResourceNotFound, "attempt to delete a user credential that does not exist"
		}
	}
	for _, a := range alters {
		var err error
		if a.cred == nil {
			err = n.agent.DeleteUser(user, a.mechanism)
		} else {
			_, err = n.agent.UpsertUser(user, membership.UserCredential{Mechanism: a.mechanism, Iterations: a.cred.Iterations,
				Salt: a.cred.Salt, StoredKey: a.cred.StoredKey, ServerKey: a.cred.ServerKey})
		}
		switch {
		case errors.Is(err, membership.ErrNotDurable):
			n.log.WithError(err).WithField("user", user).Error("SCRAM user change not saved")
			return kerr.KafkaStorageError, "the change could not be saved on this node's disk"
		case errors.Is(err, membership.ErrUnknownUser):
			return kerr.ResourceNotFound, "attempt to delete a user credential that does not exist"
		case err != nil:
			n.log.WithError(err).WithField("user", user).Warn("SCRAM user change refused")
			return kerr.UnacceptableCredential, "credential refused"
		}
	}
	return nil, ""
}
