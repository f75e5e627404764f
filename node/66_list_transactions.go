package node

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/wire"
)

// ListTransactions: v0-1
//
// Behavior:
// * Lists the transactional ids this node coordinates (every partition
//   of __transaction_state it leads, loaded first), filtered by state
//   names and producer ids; unknown state names are echoed in
//   UnknownStateFilters, as Kafka does. The admin client asks every
//   broker and merges.
//
// Version notes:
// * v1: DurationFilterMillis: only transactions running longer (KIP-994)
// * v2 (a transactional id pattern, a Java regular expression) is not
//   offered.

func (n *Node) handleListTransactions(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	// Kafka lists the ids the requester may DESCRIBE; DESCRIBE on the
	// cluster shows them all, as for ListGroups.
	who := n.requesterOf(ctx, wreq)
	all := who.mayCluster(kmsg.ACLOperationDescribe)
	known := kmsg.TransactionStateStrings()
	states := map[string]bool{}
	for _, s := range req.StateFilters {
		if slices.Contains(known, s) {
			states[s] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	coord, err := n.coords.Txns.Get()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	for p := range coord.Partitions() {
		_ = n.coords.Txns.Ensure(coord, p) // one not loaded lists none of its transactions
	}
	now := time.Now()
	for _, t := range coord.List() {
		state := t.State.String()
		switch {
		case len(req.StateFilters) > 0 && !states[state]:
			continue
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, t.ProducerID):
			continue
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (t.Start.IsZero() || now.Sub(t.Start).Milliseconds() < req.DurationFilterMillis):
			continue
		case !all && !who.mayTransactionalID(kmsg.ACLOperationDescribe, t.ID):
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = t.ID, t.ProducerID, state
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp
}
