package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ListedTxn is one transactional id a broker coordinates.
type ListedTxn struct {
	TransactionalID string `json:"transactional_id"`
	State           string `json:"state"`
	ProducerID      int64  `json:"producer_id"`
	Coordinator     int32  `json:"coordinator"`
}

// TxnListing is what ListTxns learns.
type TxnListing struct {
	Transactions []ListedTxn `json:"transactions"`
}

// ListTxns asks every broker for the transactional ids it coordinates,
// optionally only those in the given states.
func (c Config) ListTxns(ctx context.Context, states []string) (TxnListing, error) {
	cl, err := c.Kafka(ctx)
	if err != nil {
		return TxnListing{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	ls, err := kadm.NewClient(cl).ListTransactions(ctx, nil, states)
	out := TxnListing{Transactions: []ListedTxn{}}
	for _, t := range ls.Sorted() {
		out.Transactions = append(out.Transactions, ListedTxn{TransactionalID: t.TxnID, State: t.State, ProducerID: t.ProducerID, Coordinator: t.Coordinator})
	}
	if err != nil {
		return out, fmt.Errorf("list transactions: %s", explain(err))
	}
	return out, nil
}

// WriteTable prints the listing as a table.
func (l TxnListing) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TRANSACTIONAL-ID\tSTATE\tPRODUCER-ID\tCOORDINATOR")
	for _, t := range l.Transactions {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", t.TransactionalID, t.State, t.ProducerID, t.Coordinator)
	}
	return w.Flush()
}

// DescribedTxn is one transactional id's state at its coordinator.
type DescribedTxn struct {
	TransactionalID string             `json:"transactional_id"`
	State           string             `json:"state"`
	ProducerID      int64              `json:"producer_id"`
	ProducerEpoch   int16              `json:"producer_epoch"`
	TimeoutMillis   int32              `json:"timeout_ms"`
	Started         *time.Time         `json:"started,omitempty"`
	Coordinator     int32              `json:"coordinator"`
	Partitions      map[string][]int32 `json:"partitions"`
	Error           string             `json:"error,omitempty"`
}

// TxnDescription is what DescribeTxns learns.
type TxnDescription struct {
	Transactions []DescribedTxn `json:"transactions"`
}

// DescribeTxns describes transactional ids at their coordinators.
func (c Config) DescribeTxns(ctx context.Context, ids []string) (TxnDescription, error) {
	cl, err := c.Kafka(ctx)
	if err != nil {
		return TxnDescription{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	ds, err := kadm.NewClient(cl).DescribeTransactions(ctx, ids...)
	out := TxnDescription{Transactions: []DescribedTxn{}}
	var failed []string
	for _, d := range ds.Sorted() {
		t := DescribedTxn{TransactionalID: d.TxnID, State: d.State, ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch,
			TimeoutMillis: d.TimeoutMillis, Coordinator: d.Coordinator, Partitions: map[string][]int32{}}
		if d.StartTimestamp > 0 {
			s := time.UnixMilli(d.StartTimestamp).UTC()
			t.Started = &s
		}
		for topic, ps := range d.Topics {
			for p := range ps {
				t.Partitions[topic] = append(t.Partitions[topic], p)
			}
			sort.Slice(t.Partitions[topic], func(i, j int) bool { return t.Partitions[topic][i] < t.Partitions[topic][j] })
		}
		if d.Err != nil {
			t.Error = explain(d.Err)
			failed = append(failed, d.TxnID+": "+t.Error)
		}
		out.Transactions = append(out.Transactions, t)
	}
	if err != nil {
		return out, fmt.Errorf("describe transactions: %s", explain(err))
	}
	if len(failed) > 0 {
		return out, errors.New("some transactional ids could not be described: " + strings.Join(failed, "; "))
	}
	return out, nil
}

// WriteTable prints each transactional id and the partitions of its
// transaction.
func (d TxnDescription) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TRANSACTIONAL-ID\tSTATE\tPRODUCER-ID\tEPOCH\tTIMEOUT\tSTARTED\tCOORDINATOR\tPARTITIONS")
	for _, t := range d.Transactions {
		started := "-"
		if t.Started != nil {
			started = t.Started.Format(time.RFC3339)
		}
		var parts []string
		topics := make([]string, 0, len(t.Partitions))
		for topic := range t.Partitions {
			topics = append(topics, topic)
		}
		sort.Strings(topics)
		for _, topic := range topics {
			for _, p := range t.Partitions[topic] {
				parts = append(parts, fmt.Sprintf("%s/%d", topic, p))
			}
		}
		state := t.State
		if t.Error != "" {
			state = "error: " + t.Error
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\n", t.TransactionalID, orDash(state), t.ProducerID, t.ProducerEpoch,
			time.Duration(t.TimeoutMillis)*time.Millisecond, started, t.Coordinator, orDash(strings.Join(parts, ",")))
	}
	return w.Flush()
}
