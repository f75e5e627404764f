package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/txn"
	"github.com/spool-log/spool/partition"
)

// This file connects the transaction coordinator (package txn) to the
// node, as groups.go does the group coordinator: __transaction_state is an
// ordinary replicated topic of the catalog, created on the first
// transactional request with replication factor 3, or the largest odd
// number below it not above the roster (replication_factor.go), and this
// node coordinates the transactional ids of each of its partitions that
// it leads, loaded (replayed) per leader epoch.
//
// Markers go to each partition's leader: written here when this node
// leads the partition, else posted to the leader's admin listener
// (admin.TxnMarkerPath), which writes it through its replica the same way.

// transactionStatePartitions is transaction.state.log.num.partitions (50
// in Kafka; fewer here, as each partition is a Raft group).
const transactionStatePartitions = 16

// transactionStateReplication is transaction.state.log.replication.factor,
// capped by the roster.
const transactionStateReplication = 3

type txnNode struct {
	coord    atomic.Pointer[txn.Coordinator]
	createMu sync.Mutex
	loads    partitionLoads // one replay of each partition at a time
	metrics  txnMetrics
}

// txnMetrics counts transactions' ends at this node's coordinator
// (flushTxnMetrics hands them to go-metrics): spool_txn_committed,
// spool_txn_aborted (timed-out ones included) and spool_txn_timed_out,
// and the gauge spool_txn_open of ongoing transactions.
type txnMetrics struct {
	committed, aborted, timedOut atomic.Int64
	flushed                      [3]int64 // as of the last flush
}

// flushTxnMetrics emits what flushMetrics does for transactions.
func (n *Node) flushTxnMetrics() {
	m := &n.txnCoord.metrics
	now := [3]int64{m.committed.Load(), m.aborted.Load(), m.timedOut.Load()}
	for i, name := range []string{"committed", "aborted", "timed_out"} {
		if d := now[i] - m.flushed[i]; d > 0 {
			n.metrics.IncrCounter([]string{"txn", name}, float32(d))
		}
	}
	m.flushed = now
	if c := n.txnCoord.coord.Load(); c != nil {
		open := 0
		for _, t := range c.List() {
			if t.State == txn.Ongoing {
				open++
			}
		}
		n.metrics.SetGauge([]string{"txn", "open"}, float32(open))
	}
}

func (n *Node) txnConfig() txn.Config {
	parts := int32(transactionStatePartitions)
	if spec, ok := n.catalog.Topic(txn.TopicName); ok {
		parts = spec.Partitions
	}
	return txn.Config{
		Partitions:    parts,
		MaxTimeout:    15 * time.Minute,
		AbortInterval: n.cfg.TxnAbortInterval,
		AllocateID:    n.pids.allocate,
		PartitionCount: func(topic string) (int32, bool) {
			spec, ok := n.catalog.Topic(topic)
			return spec.Partitions, ok
		},
		GroupPartitions: func() int32 {
			if spec, ok := n.catalog.Topic(group.TopicName); ok {
				return spec.Partitions
			}
			return n.groupConfig().Partitions
		},
		Logger: n.log,
		OnEnd: func(state kmsg.TransactionState, timedOut bool) {
			m := &n.txnCoord.metrics
			switch {
			case timedOut:
				m.timedOut.Add(1)
			case state == txn.CompleteCommit:
				m.committed.Add(1)
			default:
				m.aborted.Add(1)
			}
		},
	}
}

// txns returns the node's transaction coordinator, creating it (and
// __transaction_state) on first use.
func (n *Node) txns() (*txn.Coordinator, error) {
	if n.isClosing() {
		return nil, errors.New("node shutting down")
	}
	tn := &n.txnCoord
	if c := tn.coord.Load(); c != nil {
		return c, nil
	}
	tn.createMu.Lock()
	defer tn.createMu.Unlock()
	if c := tn.coord.Load(); c != nil {
		return c, nil
	}
	// Transactions that commit offsets need __consumer_offsets too.
	if _, _, err := n.groups(); err != nil {
		return nil, err
	}
	if _, ok := n.catalog.Topic(txn.TopicName); !ok {
		// Capped by the roster, not by the live brokers, so that nodes
		// creating it concurrently make one spec (groups.go).
		rf := n.clusterFactor(transactionStateReplication) // the largest odd: replication_factor.go
		if _, err := n.parts.CreateTopic(hosted.Create{Name: txn.TopicName, Partitions: transactionStatePartitions, ReplicationFactor: rf, Configs: offsetsTopicConfigs, Auto: true}); err != nil && kerrOf(err) != kerr.TopicAlreadyExists {
			return nil, fmt.Errorf("create %s: %w", txn.TopicName, err)
		}
	}
	c, err := txn.New(n.txnConfig(), offsetsLog{n, txn.TopicName}, markerWriter{n})
	if err != nil {
		return nil, err
	}
	tn.coord.Store(c)
	if !n.loops.Go(func(ctx context.Context) {
		<-ctx.Done()
		c.Close()
	}) {
		c.Close()
	}
	return c, nil
}

// txnCoordinatorFor returns the coordinator if this node coordinates
// txnID, its partition loaded in the current leader epoch, or the code
// the client should see.
func (n *Node) txnCoordinatorFor(txnID string) (*txn.Coordinator, int16) {
	if txnID == "" {
		return nil, kerr.InvalidRequest.Code
	}
	c, err := n.txns()
	if err != nil {
		n.log.WithError(err).Warn("transaction coordinator unavailable")
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return c, n.ensureTxnPartition(c, c.Partition(txnID))
}

// ensureTxnPartition loads partition p of __transaction_state if this
// node leads it, and unloads it if it no longer does.
func (n *Node) ensureTxnPartition(c *txn.Coordinator, p int32) int16 {
	return n.ensureCoordinatorPartition(txn.TopicName, c, &n.txnCoord.loads, p, "transactions")
}

// fencedCode is PRODUCER_FENCED as a request version before KIP-588's
// knows it: INVALID_PRODUCER_EPOCH.
func fencedCode(code int16, knowsFenced bool) int16 {
	if code == kerr.ProducerFenced.Code && !knowsFenced {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// errMarkerFenced: the partition knows a newer epoch of the producer than
// the marker's, so a newer coordinator decision superseded it.
var errMarkerFenced = errors.New("marker epoch older than the producer's")

// writeMarkerLocal writes a marker to a partition this node leads and
// returns once it is committed.
func (n *Node) writeMarkerLocal(ctx context.Context, tp txn.TopicPartition, mk txn.Marker) error {
	if _, ok := n.catalog.Topic(tp.Topic); !ok {
		return txn.ErrPartitionGone
	}
	p, e := n.leaderPartition(tp.Topic, tp.Partition)
	if e == kerr.UnknownTopicOrPartition {
		return txn.ErrPartitionGone
	}
	if e != nil {
		return e
	}
	// As a produce: in the log's order under the partition's append
	// lock, not while the leader's round writes it (EnqueueMarker).
	pending, fence, err := p.EnqueueMarker(ctx, mk.ProducerID, mk.Epoch, mk.Commit, mk.CoordinatorEpoch)
	switch fence {
	case hosted.MarkerCoordinatorOld:
		return fmt.Errorf("marker to %s-%d from coordinator epoch %d: %w", tp.Topic, tp.Partition, mk.CoordinatorEpoch, txn.ErrCoordinatorFenced)
	case hosted.MarkerEpochOld:
		return fmt.Errorf("%w: %w", txn.ErrPartitionGone, errMarkerFenced)
	}
	if err != nil {
		return err
	}
	info, commit, err := pending.Appended()
	if err != nil {
		p.SettleProducer(mk.ProducerID, pending, info, err)
		return fmt.Errorf("write marker to %s-%d: %w", tp.Topic, tp.Partition, err)
	}
	if err := commit.Wait(ctx); err != nil {
		return fmt.Errorf("commit marker at %s-%d offset %d: %w", tp.Topic, tp.Partition, info.BaseOffset, err)
	}
	if tp.Topic == group.TopicName {
		if coord := n.groupCoord.coord.Load(); coord != nil {
			coord.CompleteTxn(tp.Partition, mk.ProducerID, mk.Epoch, mk.Commit)
		}
	}
	return nil
}

// markerWriter is txn.Markers: local partitions directly, others through
// their leader's admin listener.
type markerWriter struct{ n *Node }

// markerRequest is the body of admin.TxnMarkerPath.
type markerRequest struct {
	Topic     string     `json:"topic"`
	Partition int32      `json:"partition"`
	Marker    txn.Marker `json:"marker"`
}

type markerResponse struct {
	ErrorCode int16  `json:"error_code"`
	Gone      bool   `json:"gone,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (w markerWriter) Write(ctx context.Context, tp txn.TopicPartition, mk txn.Marker) error {
	n := w.n
	spec, ok := n.catalog.Topic(tp.Topic)
	if !ok || tp.Partition < 0 || tp.Partition >= spec.Partitions {
		return txn.ErrPartitionGone
	}
	leader := n.leaderOf(spec, tp.Partition)
	switch {
	case leader < 0:
		return kerr.LeaderNotAvailable
	case leader == n.cfg.NodeID:
		return n.writeMarkerLocal(ctx, tp, mk)
	}
	m, ok := n.agent.LiveBrokers()[leader]
	if !ok || m.AdminAddr == "" {
		return fmt.Errorf("broker %d: no admin address known", leader)
	}
	body, _ := json.Marshal(markerRequest{Topic: tp.Topic, Partition: tp.Partition, Marker: mk})
	var mr markerResponse
	if err := n.peers.PostJSON(ctx, m.AdminAddr, admin.TxnPath+"marker", body, 4096, &mr); err != nil {
		return fmt.Errorf("broker %d: %w", leader, err)
	}
	switch {
	case mr.Gone:
		return txn.ErrPartitionGone
	case mr.ErrorCode == kerr.TransactionCoordinatorFenced.Code:
		return fmt.Errorf("broker %d: marker to %s-%d: %w", leader, tp.Topic, tp.Partition, txn.ErrCoordinatorFenced)
	case mr.ErrorCode != 0 || mr.Error != "":
		return fmt.Errorf("broker %d: marker to %s-%d: code %d %s", leader, tp.Topic, tp.Partition, mr.ErrorCode, mr.Error)
	}
	return nil
}

// serveTxn answers peers' posts under admin.TxnPath.
func (n *Node) serveTxn(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimPrefix(r.URL.Path, admin.TxnPath) {
	case "marker":
		n.serveTxnMarker(w, r)
	case "verify":
		n.serveTxnVerify(w, r)
	default:
		http.NotFound(w, r)
	}
}

// serveTxnMarker writes a marker a coordinator posted (markerWriter).
func (n *Node) serveTxnMarker(w http.ResponseWriter, r *http.Request) {
	var req markerRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var out markerResponse
	err := n.writeMarkerLocal(ctx, txn.TopicPartition{Topic: req.Topic, Partition: req.Partition}, req.Marker)
	var ke *kerr.Error
	switch {
	case err == nil:
	case errors.Is(err, txn.ErrPartitionGone):
		out.Gone = true
	case errors.Is(err, txn.ErrCoordinatorFenced):
		out.ErrorCode = kerr.TransactionCoordinatorFenced.Code
	case errors.As(err, &ke):
		out.ErrorCode = ke.Code
	default:
		out.Error = err.Error()
	}
	if err != nil {
		n.log.WithError(err).WithFields(logrus.Fields{"topic": req.Topic, "partition": req.Partition}).Debug("transaction marker not written")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// verifyRequest is the body of admin.TxnPath+"verify".
type verifyRequest struct {
	TxnID      string `json:"transactional_id"`
	ProducerID int64  `json:"producer_id"`
	Epoch      int16  `json:"epoch"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
}

type verifyResponse struct {
	ErrorCode int16 `json:"error_code"`
}

func (n *Node) serveTxnVerify(w http.ResponseWriter, r *http.Request) {
	var req verifyRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	code := n.verifyTxnLocal(req)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(verifyResponse{ErrorCode: code})
}

func (n *Node) verifyTxnLocal(req verifyRequest) int16 {
	coord, code := n.txnCoordinatorFor(req.TxnID)
	if code != 0 {
		return code
	}
	return coord.Verify(req.TxnID, req.ProducerID, req.Epoch, txn.TopicPartition{Topic: req.Topic, Partition: req.Partition})
}

// verifyTxnBatch checks, before the first transactional batch of a
// transaction is appended to p, that the producer's ongoing transaction
// holds p, asking the transaction's coordinator. It returns the producer's
// marker count as of the check (the append refuses the batch if a marker
// came since) or the code to refuse it with.
func (n *Node) verifyTxnBatch(ctx context.Context, p *localPartition, txnID string, h partition.BatchHeader, topic string) (uint64, int16) {
	open, markers, e := p.TxnView(h.ProducerID, h.ProducerEpoch)
	if e != nil {
		return 0, e.Code
	}
	if open {
		return markers, 0
	}
	req := verifyRequest{TxnID: txnID, ProducerID: h.ProducerID, Epoch: h.ProducerEpoch, Topic: topic, Partition: p.Index}
	code, err := n.verifyTxn(ctx, req)
	if err != nil {
		n.log.WithError(err).WithField("transactional_id", txnID).Debug("transactional batch not verified")
		return 0, kerr.NotEnoughReplicas.Code // retriable: the coordinator could not be asked
	}
	switch code {
	case 0:
		return markers, 0
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code:
		return 0, kerr.InvalidProducerEpoch.Code
	case kerr.InvalidProducerIDMapping.Code:
		return 0, kerr.InvalidProducerIDMapping.Code
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.ConcurrentTransactions.Code:
		return 0, kerr.NotEnoughReplicas.Code
	default:
		return 0, kerr.InvalidTxnState.Code
	}
}

// verifyTxn asks txnID's coordinator, here or on its node.
func (n *Node) verifyTxn(ctx context.Context, req verifyRequest) (int16, error) {
	c, err := n.txns()
	if err != nil {
		return 0, err
	}
	spec, ok := n.catalog.Topic(txn.TopicName)
	p := c.Partition(req.TxnID)
	if !ok || p >= spec.Partitions {
		return 0, errors.New("no transaction state topic")
	}
	leader := n.leaderOf(spec, p)
	switch {
	case leader < 0:
		return 0, errors.New("transaction coordinator unknown")
	case leader == n.cfg.NodeID:
		return n.verifyTxnLocal(req), nil
	}
	m, ok := n.agent.LiveBrokers()[leader]
	if !ok || m.AdminAddr == "" {
		return 0, fmt.Errorf("broker %d: no admin address known", leader)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out verifyResponse
	if err := n.peers.PostJSON(ctx, m.AdminAddr, admin.TxnPath+"verify", body, 4096, &out); err != nil {
		return 0, err
	}
	return out.ErrorCode, nil
}

// txnLoadInterval is how often a node looks for __transaction_state
// partitions it has come to lead.
const txnLoadInterval = time.Second

// loadLedTxnPartitions loads every __transaction_state partition this
// node leads and has not loaded in its current epoch: a coordinator that
// took over must finish the markers of transactions left prepared, and
// abort timed-out ones, whether or not any client asks it anything.
func (n *Node) loadLedTxnPartitions() {
	spec, ok := n.catalog.Topic(txn.TopicName)
	if !ok || n.isClosing() {
		return
	}
	var led []int32
	leads := make(map[int32]bool)
	for p := range spec.Partitions {
		if lp := n.parts.Current(txn.TopicName, p, spec.ID); lp != nil {
			if _, ok := lp.Replica.WritableEpoch(); ok {
				led = append(led, p)
				leads[p] = true
			}
		}
	}
	// A deposed coordinator stops (its marker loops with it): the new
	// leader's coordinator finishes what it held.
	if c := n.txnCoord.coord.Load(); c != nil {
		for _, p := range c.LoadedPartitions() {
			if !leads[p] {
				c.Unload(p)
			}
		}
	}
	if len(led) == 0 {
		return
	}
	c, err := n.txns()
	if err != nil {
		return
	}
	for _, p := range led {
		n.ensureTxnPartition(c, p)
	}
}
