package node

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/wire"
)

// AlterClientQuotas: v0-1
//
// Behavior:
// * Sets and removes client quotas (KIP-546) cluster-wide: the
//   membership catalog, saved on this node, then spread by gossip and
//   anti-entropy. An entry names an entity (user, client-id, user and
//   client-id, or ip alone; a null name is the type's default) and ops,
//   each setting a key to a value or removing it. The valid entries of a
//   request are saved together; one result per entry, in order, echoing
//   its entity. Removing a key that is not set is a success.
// * Keys: producer_byte_rate, consumer_byte_rate (whole bytes per
//   second), request_percentage, controller_mutation_rate for user and
//   client-id entities; connection_creation_rate (whole) for ip.
// * Needs ALTER_CONFIGS on the cluster, else every result is
//   CLUSTER_AUTHORIZATION_FAILED (as Kafka).
// * ValidateOnly checks everything and changes nothing.
// * Errors per entry, with a message: INVALID_REQUEST for an unknown or
//   repeated entity type, an empty entity or name, ip beside user or
//   client-id, an ip that is not an IP address, an unknown key or one the
//   entity cannot carry, a key twice in one entry, a negative, NaN,
//   infinite or (for a whole-number key) fractional value;
//   KAFKA_STORAGE_ERROR when the catalog cannot be saved (nothing
//   changed: retry); INVALID_REQUEST when the cluster would hold more
//   than membership.MaxQuotas quotas, or while a live node of an older
//   version would drop them.
//
// Version notes:
// * v0: the API (Kafka 2.6)
// * v1: flexible versions

func (n *Node) handleAlterClientQuotas(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	for i, re := range req.Entries {
		out := kmsg.NewAlterClientQuotasResponseEntry()
		for _, c := range re.Entity {
			oc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			oc.Type, oc.Name = c.Type, c.Name
			out.Entity = append(out.Entity, oc)
		}
		resp.Entries[i] = out
	}
	fail := func(i int, err *kerr.Error, msg string) {
		resp.Entries[i].ErrorCode = err.Code
		resp.Entries[i].ErrorMessage = &msg
	}
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlterConfigs) {
		for i := range resp.Entries {
			fail(i, kerr.ClusterAuthorizationFailed, "ALTER_CONFIGS on the cluster is needed to alter client quotas")
		}
		return resp
	}
	var changes []membership.QuotaChange
	var at []int
	for i, re := range req.Entries {
		cs, err := alterQuotaChanges(re)
		if err != nil {
			fail(i, kerr.InvalidRequest, err.Error())
			continue
		}
		changes = append(changes, cs...)
		at = append(at, i)
	}
	if req.ValidateOnly || len(at) == 0 {
		return resp
	}
	if err := n.alterQuotas(changes); err != nil {
		n.log.WithError(err).Warn("alter client quotas")
		e, msg := kerr.UnknownServerError, "the client quotas could not be altered"
		switch {
		case errors.Is(err, membership.ErrNotDurable):
			e, msg = kerr.KafkaStorageError, "the client quotas could not be saved; nothing changed"
		case errors.Is(err, membership.ErrTooManyQuotas), errors.Is(err, membership.ErrMixedVersions),
			errors.Is(err, membership.ErrInvalidQuota):
			e, msg = kerr.InvalidRequest, err.Error()
		}
		for _, i := range at {
			fail(i, e, msg)
		}
	}
	return resp
}

// alterQuotaChanges checks one entry, returning its changes or why Kafka
// would refuse it.
func alterQuotaChanges(re kmsg.AlterClientQuotasRequestEntry) ([]membership.QuotaChange, error) {
	cs := make([]quota.Component, len(re.Entity))
	for i, c := range re.Entity {
		cs[i] = quota.Component{Type: c.Type, Name: c.Name}
	}
	e, err := quota.EntityOf(cs)
	if err != nil {
		return nil, cleanQuotaError(err)
	}
	seen := map[string]bool{}
	var out []membership.QuotaChange
	for _, op := range re.Ops {
		if seen[op.Key] {
			return nil, errors.New("key " + fmt.Sprintf("%.60q", op.Key) + " appears more than once for the entity")
		}
		seen[op.Key] = true
		if op.Remove {
			// A removal still names a key the entity may carry.
			if err := membership.ValidateQuota(e, op.Key, 0); err != nil {
				return nil, cleanQuotaError(err)
			}
		} else if err := membership.ValidateQuota(e, op.Key, op.Value); err != nil {
			return nil, cleanQuotaError(err)
		}
		out = append(out, membership.QuotaChange{Entity: e, Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	return out, nil
}

// cleanQuotaError drops the sentinel's prefix from a message a client
// reads.
func cleanQuotaError(err error) error {
	msg := strings.TrimPrefix(err.Error(), membership.ErrInvalidQuota.Error()+": ")
	return errors.New(msg)
}

func (n *Node) alterQuotas(cs []membership.QuotaChange) error {
	if n.agent == nil {
		return errors.New("no cluster membership")
	}
	return n.agent.AlterQuotas(cs)
}
