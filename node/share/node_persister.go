package share

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share-partition state made durable (Persister): each share partition's
// snapshot goes to the leader of its StateTopic partition (a Store there),
// locally or through that leader's admin listener (ServeState), as
// transaction markers go to their partitions' leaders.

// stateWait bounds how long a state request waits for its StateTopic
// partition to have a leader (just created, or failing over) before it
// fails.
const stateWait = 10 * time.Second

// forwardTimeout bounds a state request forwarded to another broker.
const forwardTimeout = 30 * time.Second

// localStore is the store loaded for k's partition when this node leads
// it, else the leader's broker id. It waits (polling, no lock held) up to
// stateWait while the partition has no leader or is loading.
func (n *Node) localStore(k Key) (*Store, int32, error) {
	deadline := time.Now().Add(stateWait)
	for {
		st, leader, err := n.localStoreOnce(k)
		if err == nil || time.Now().After(deadline) || n.b.Closing() ||
			!(errors.Is(err, kerr.LeaderNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotCoordinator)) {
			return st, leader, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *Node) localStoreOnce(k Key) (*Store, int32, error) {
	st, err := n.state.Get()
	if err != nil {
		return nil, -1, err
	}
	p := st.Partition(k)
	if _, ok := n.b.Topic(StateTopic); !ok {
		return nil, -1, ErrNotLoaded
	}
	leader := n.b.LeaderOf(StateTopic, p)
	switch {
	case leader < 0:
		return nil, -1, kerr.LeaderNotAvailable
	case leader != n.b.NodeID():
		return nil, leader, nil
	}
	if err := n.state.Ensure(st, p); err != nil {
		return nil, -1, err
	}
	return st, leader, nil
}

// stateRequest is the body of a forwarded state request (ServeState).
type stateRequest struct {
	Group     string   `json:"group"`
	TopicID   [16]byte `json:"topic_id"`
	Partition int32    `json:"partition"`
	Epoch     int32    `json:"epoch"`
	Snapshot  []byte   `json:"snapshot,omitempty"`
	// StartOffset is OpReset's new SPSO.
	StartOffset int64 `json:"start_offset,omitempty"`
}

type stateResponse struct {
	Found     bool   `json:"found,omitempty"`
	Snapshot  []byte `json:"snapshot,omitempty"`
	Fenced    bool   `json:"fenced,omitempty"`
	Error     string `json:"error,omitempty"`
	ErrorCode int16  `json:"error_code,omitempty"` // OpReset and OpDelete: the partition's
}

// maxStateBody bounds a request or response: a snapshot of the largest
// window (MaxSnapshotRuns runs of 7 bytes), base64.
const maxStateBody = 1 << 20

// forward posts a state request to leader.
func (n *Node) forward(leader int32, op string, req stateRequest) (stateResponse, error) {
	var out stateResponse
	ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
	defer cancel()
	if err := n.b.PostToBroker(ctx, leader, n.path+op, req, maxStateBody, &out); err != nil {
		return out, err
	}
	switch {
	case out.Fenced:
		return out, fmt.Errorf("broker %d: %w", leader, ErrFenced)
	case out.Error != "":
		return out, fmt.Errorf("broker %d: share state %s: %s", leader, op, out.Error)
	}
	return out, nil
}

// persister is Persister over the stores: the local one when this node
// leads k's state partition, else its leader's.
type persister struct{ n *Node }

func (s persister) Claim(k Key, epoch int32) (Snapshot, bool, error) {
	st, leader, err := s.n.localStore(k)
	if err != nil {
		return Snapshot{}, false, err
	}
	if st != nil {
		return st.Claim(k, epoch)
	}
	out, err := s.n.forward(leader, "claim", stateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, Epoch: epoch})
	if err != nil || !out.Found {
		return Snapshot{}, false, err
	}
	snap, err := DecodeSnapshot(out.Snapshot)
	return snap, err == nil, err
}

func (s persister) Write(k Key, snap Snapshot) error {
	st, leader, err := s.n.localStore(k)
	if err != nil {
		return err
	}
	if st != nil {
		return st.Write(k, snap)
	}
	_, err = s.n.forward(leader, "write", stateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition, Epoch: snap.Epoch, Snapshot: snap.Encode()})
	return err
}

func (s persister) Read(k Key) (Snapshot, bool, error) {
	st, leader, err := s.n.localStore(k)
	if err != nil {
		return Snapshot{}, false, err
	}
	if st != nil {
		return st.Read(k)
	}
	out, err := s.n.forward(leader, "read", stateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition})
	if err != nil || !out.Found {
		return Snapshot{}, false, err
	}
	snap, err := DecodeSnapshot(out.Snapshot)
	return snap, err == nil, err
}

func (s persister) Forget(k Key) error {
	st, leader, err := s.n.localStore(k)
	if err != nil {
		return err
	}
	if st != nil {
		return st.Forget(k)
	}
	_, err = s.n.forward(leader, "forget", stateRequest{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition})
	return err
}

// Persister is the share-partition state's store as a handler reads it
// (DescribeShareGroupOffsets): this node's or its leader's.
func (n *Node) Persister() Persister { return persister{n} }
