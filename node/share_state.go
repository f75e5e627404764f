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

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/share"
)

// Share-partition state made durable (node/share's Persister): each
// share partition's snapshot goes to the leader of its __share_group_state
// partition (node/share's Store there), locally or through that leader's
// admin listener (admin.SharePath), as transaction markers go to their
// partitions' leaders (txns.go).

// shareStatePartitions is __share_group_state's partition count (Kafka's
// share.coordinator.state.topic.num.partitions is 50; the load here is a
// snapshot per acknowledgement, small and compacted).
const shareStatePartitions = 8

type shareStateNode struct {
	createMu sync.Mutex
	store    atomic.Pointer[share.Store]
	loads    partitionLoads
}

// shareStore is this node's store, creating __share_group_state first
// (as __consumer_offsets: every node derives the same spec).
func (n *Node) shareStore() (*share.Store, error) {
	s := &n.shareState
	if st := s.store.Load(); st != nil {
		return st, nil
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if st := s.store.Load(); st != nil {
		return st, nil
	}
	if _, ok := n.catalog.Topic(share.StateTopic); !ok {
		rf := n.clusterFactor(int(n.cfg.Groups.OffsetsTopicReplicationFactor))
		if _, err := n.parts.CreateTopic(hosted.Create{Name: share.StateTopic, Partitions: shareStatePartitions, ReplicationFactor: rf, Configs: offsetsTopicConfigs, Auto: true}); err != nil && kerrOf(err) != kerr.TopicAlreadyExists {
			return nil, fmt.Errorf("create %s: %w", share.StateTopic, err)
		}
	}
	spec, ok := n.catalog.Topic(share.StateTopic)
	if !ok {
		return nil, fmt.Errorf("%s not in the catalog yet", share.StateTopic)
	}
	st := share.NewStore(offsetsLog{n, share.StateTopic}, spec.Partitions)
	s.store.Store(st)
	return st, nil
}

// shareStoreLoader is the store as a partitionLoader.
type shareStoreLoader struct{ st *share.Store }

func (l shareStoreLoader) Loaded(p, epoch int32) bool { return l.st.Loaded(p, epoch) }
func (l shareStoreLoader) Load(p, epoch int32) error  { return l.st.Load(p, epoch) }
func (l shareStoreLoader) Unload(p int32)             { l.st.Unload(p) }

// shareStoreWait bounds how long a state request waits for its
// __share_group_state partition to have a leader (just created, or
// failing over) before it fails.
const shareStoreWait = 10 * time.Second

// localShareStore is the store loaded for k's partition when this node
// leads it, else the leader's broker id. It waits (polling, no lock held)
// up to shareStoreWait while the partition has no leader or is loading.
func (n *Node) localShareStore(k share.Key) (*share.Store, int32, error) {
	deadline := time.Now().Add(shareStoreWait)
	for {
		st, leader, err := n.localShareStoreOnce(k)
		if err == nil || time.Now().After(deadline) || n.isClosing() ||
			!(errors.Is(err, kerr.LeaderNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator)) {
			return st, leader, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *Node) localShareStoreOnce(k share.Key) (*share.Store, int32, error) {
	st, err := n.shareStore()
	if err != nil {
		return nil, -1, err
	}
	p := st.Partition(k)
	spec, ok := n.catalog.Topic(share.StateTopic)
	if !ok {
		return nil, -1, share.ErrNotLoaded
	}
	leader := n.leaderOf(spec, p)
	switch {
	case leader < 0:
		return nil, -1, kerr.LeaderNotAvailable
	case leader != n.cfg.NodeID:
		return nil, leader, nil
	}
	if code := n.ensureCoordinatorPartition(share.StateTopic, shareStoreLoader{st}, &n.shareState.loads, p, "share state"); code != 0 {
		return nil, -1, kerr.ErrorForCode(code)
	}
	return st, n.cfg.NodeID, nil
}

// sharePersister is share.Persister over the stores.
type sharePersister struct{ n *Node }

// shareStateRequest is the body of admin.SharePath+"claim" and "write".
type shareStateRequest struct {
	Group     string   `json:"group"`
	TopicID   [16]byte `json:"topic_id"`
	Partition int32    `json:"partition"`
	Epoch     int32    `json:"epoch"`
	Snapshot  []byte   `json:"snapshot,omitempty"`
	// StartOffset is "reset"'s new SPSO.
	StartOffset int64 `json:"start_offset,omitempty"`
}

type shareStateResponse struct {
	Found     bool   `json:"found,omitempty"`
	Snapshot  []byte `json:"snapshot,omitempty"`
	Fenced    bool   `json:"fenced,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorCode int16  `json:"error_code,omitempty"` // "reset" and "delete": the partition's
}

// maxShareStateBody bounds a request or response: a snapshot of the
// largest window (share.MaxSnapshotRuns runs of 7 bytes), base64.
const maxShareStateBody = 1 << 20

func (s sharePersister) Claim(k share.Key, epoch int32) (share.Snapshot, bool, error) {
	st, leader, err := s.n.localShareStore(k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	if st != nil {
		return st.Claim(k, epoch)
	}
	out, err := s.n.postShareState(leader, "claim", shareStateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, Epoch: epoch})
	if err != nil || !out.Found {
		return share.Snapshot{}, false, err
	}
	snap, err := share.DecodeSnapshot(out.Snapshot)
	return snap, err == nil, err
}

func (s sharePersister) Write(k share.Key, snap share.Snapshot) error {
	st, leader, err := s.n.localShareStore(k)
	if err != nil {
		return err
	}
	if st != nil {
		return st.Write(k, snap)
	}
	_, err = s.n.postShareState(leader, "write", shareStateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, Epoch: snap.Epoch, Snapshot: snap.Encode()})
	return err
}

func (s sharePersister) Read(k share.Key) (share.Snapshot, bool, error) {
	st, leader, err := s.n.localShareStore(k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	if st != nil {
		return st.Read(k)
	}
	out, err := s.n.postShareState(leader, "read", shareStateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition})
	if err != nil || !out.Found {
		return share.Snapshot{}, false, err
	}
	snap, err := share.DecodeSnapshot(out.Snapshot)
	return snap, err == nil, err
}

func (s sharePersister) Forget(k share.Key) error {
	st, leader, err := s.n.localShareStore(k)
	if err != nil {
		return err
	}
	if st != nil {
		return st.Forget(k)
	}
	_, err = s.n.postShareState(leader, "forget", shareStateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition})
	return err
}

// shareAdminOnLeader resets ("reset") or deletes ("delete") k's share
// partition on the partition's leader, this node or another; it returns
// the partition's error code.
func (n *Node) shareAdminOnLeader(op string, topic string, k share.Key, start int64) int16 {
	spec, ok := n.catalog.Topic(topic)
	if !ok || k.Partition < 0 || k.Partition >= spec.Partitions {
		return kerr.UnknownTopicOrPartition.Code
	}
	leader := n.leaderOf(spec, k.Partition)
	switch {
	case leader < 0:
		return kerr.LeaderNotAvailable.Code
	case leader == n.cfg.NodeID:
		return n.shareAdminLocal(op, k, start)
	}
	out, err := n.postShareState(leader, op, shareStateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, StartOffset: start})
	if err != nil {
		n.log.WithError(err).WithField("group", k.Group).Warn("share offsets " + op)
		return kerr.CoordinatorNotAvailable.Code
	}
	return out.ErrorCode
}

// shareAdminLocal does shareAdminOnLeader's op on this node.
func (n *Node) shareAdminLocal(op string, k share.Key, start int64) int16 {
	name, ok := n.catalog.TopicName(k.TopicID)
	if !ok {
		return kerr.UnknownTopicID.Code
	}
	p, e := n.leaderPartition(name, k.Partition)
	if e != nil {
		return e.Code
	}
	_, parts := n.shares()
	switch op {
	case "reset":
		if start < p.Replica.LogStartOffset() || start > p.Replica.HighWatermark() {
			return kerr.OffsetOutOfRange.Code
		}
		e = parts.Reset(k, shareLog{p}, start)
	default:
		e = parts.Delete(k)
	}
	if e != nil {
		return e.Code
	}
	return 0
}

func (n *Node) postShareState(leader int32, op string, req shareStateRequest) (shareStateResponse, error) {
	var out shareStateResponse
	m, ok := n.agent.LiveBrokers()[leader]
	if !ok || m.AdminAddr == "" {
		return out, fmt.Errorf("broker %d: no admin address known", leader)
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), offsetsCommitTimeout)
	defer cancel()
	if err := n.peers.PostJSON(ctx, m.AdminAddr, admin.SharePath+op, body, maxShareStateBody, &out); err != nil {
		return out, fmt.Errorf("broker %d: %w", leader, err)
	}
	switch {
	case out.Fenced:
		return out, fmt.Errorf("broker %d: %w", leader, share.ErrFenced)
	case out.Error != "":
		return out, fmt.Errorf("broker %d: share state %s: %s", leader, op, out.Error)
	}
	return out, nil
}

// serveShareState answers peers' posts under admin.SharePath on the
// leader of the share partition's __share_group_state partition.
func (n *Node) serveShareState(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, admin.SharePath)
	var req shareStateRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxShareStateBody)).Decode(&req); err != nil ||
		(op != "claim" && op != "write" && op != "read" && op != "forget" && op != "reset" && op != "delete") {
		http.Error(w, fmt.Sprintf("bad share state request %q: %v", op, err), http.StatusBadRequest)
		return
	}
	k := share.Key{Group: req.Group, TopicPartition: share.TopicPartition{TopicID: req.TopicID, Partition: req.Partition}}
	var out shareStateResponse
	if op == "reset" || op == "delete" { // on the share partition's leader
		out.ErrorCode = n.shareAdminLocal(op, k, req.StartOffset)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	st, leader, err := n.localShareStore(k)
	if err == nil && st == nil {
		err = fmt.Errorf("broker %d leads the state partition, not this one", leader)
	}
	if err == nil {
		switch op {
		case "claim":
			var snap share.Snapshot
			if snap, out.Found, err = st.Claim(k, req.Epoch); err == nil && out.Found {
				out.Snapshot = snap.Encode()
			}
		case "write":
			var snap share.Snapshot
			if snap, err = share.DecodeSnapshot(req.Snapshot); err == nil {
				err = st.Write(k, snap)
			}
		case "read":
			var snap share.Snapshot
			if snap, out.Found, err = st.Read(k); err == nil && out.Found {
				out.Snapshot = snap.Encode()
			}
		case "forget":
			err = st.Forget(k)
		}
	}
	if errors.Is(err, share.ErrFenced) {
		out.Fenced = true
	} else if err != nil {
		out.Error = err.Error()
	}
	if err != nil {
		n.log.WithError(err).WithFields(logrus.Fields{"group": req.Group, "partition": req.Partition, "op": op}).Debug("share state request refused")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
