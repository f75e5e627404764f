package replica

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/spool-log/spool/node/replica/raftlog"
)

// A snapshot that holds records (the log below the Raft log, which Seal
// left to the cleaner: raftlog/copy.go) reaches a follower as a MsgSnap of
// metadata only. The follower does not step it into raft until it has
// copied the records from the sender, outside the round, over
// DriverConfig.FetchSnapshot (the leader's admin listener, in the node);
// the leader, having had no answer, sends the snapshot again until the
// copy is staged, and the copy's own MsgSnap is stepped as soon as it is.

// ErrNotHosted: this node holds no replica of the group asked for.
var ErrNotHosted = errors.New("no replica of this partition here")

// copyRetryGap spaces the copies of a group after one failed, while its
// leader keeps sending the snapshot.
const copyRetryGap = time.Second

// WriteSnapshot writes group k's current snapshot and its records to w
// (raftlog.(*Storage).WriteSnapshot): what a follower's FetchSnapshot reads.
func (d *Driver) WriteSnapshot(k GroupKey, w io.Writer) error {
	g := d.group(k)
	if g == nil {
		return ErrNotHosted
	}
	_, err := g.st.WriteSnapshot(w)
	return err
}

// awaitsCopy says whether MsgSnap m must not be stepped yet, because its
// records are not here; it starts their copy. Called in the group's round.
func (g *raftGroup) awaitsCopy(m *pb.Message) bool {
	snap := m.GetSnapshot()
	if g.st.Staged(snap) {
		return false
	}
	// Raft ignores a snapshot this replica's log already covers (it only
	// moves the commit): nothing to copy.
	md := snap.GetMetadata()
	if md.GetIndex() <= g.applied {
		return false
	}
	if t, err := g.st.Term(md.GetIndex()); err == nil && t == md.GetTerm() {
		return false
	}
	if g.copying != nil || time.Now().Before(g.copyAfter) {
		return true
	}
	fetch := g.d.cfg.FetchSnapshot
	if fetch == nil {
		g.copyAfter = time.Now().Add(time.Minute)
		g.log.Warn("a snapshot with records arrived, and this node cannot copy them (no FetchSnapshot): the replica stays behind")
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.copying = cancel
	from := brokerOf(m.GetFrom())
	log := g.log.WithFields(logrus.Fields{"from": from, "snapshot_index": md.GetIndex()})
	log.Info("copying the records of a snapshot from the leader")
	go func() {
		start := time.Now()
		staged, n, err := g.copySnapshot(ctx, fetch, from)
		g.mu.Lock()
		g.copying = nil
		if err != nil {
			g.copyAfter = time.Now().Add(copyRetryGap)
		}
		g.mu.Unlock()
		cancel()
		if err != nil {
			log.WithError(err).Warn("copy of a snapshot's records failed; retrying when the leader sends it again")
			return
		}
		log.WithFields(logrus.Fields{"bytes": n, "took": time.Since(start).Round(time.Millisecond)}).Info("snapshot records copied")
		if staged.GetMetadata().GetIndex() == md.GetIndex() && staged.GetMetadata().GetTerm() == md.GetTerm() {
			g.d.Deliver(m.GetFrom(), g.key, m) // step it now
		} // else the leader moved on: its next MsgSnap is the one staged
	}()
	return true
}

// copySnapshot fetches the sender's snapshot and stages its records,
// returning the snapshot staged and how many bytes were read.
func (g *raftGroup) copySnapshot(ctx context.Context, fetch FetchSnapshotFunc, from int32) (*pb.Snapshot, int64, error) {
	rc, err := fetch(ctx, g.key, from)
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	snap, err := raftlog.ReadSnapshotHeader(cr)
	if err != nil {
		return nil, cr.n, err
	}
	if err := g.st.StageSnapshot(snap, cr); err != nil {
		return nil, cr.n, err
	}
	return snap, cr.n, nil
}

// FetchSnapshotFunc opens the stream Driver.WriteSnapshot writes on broker
// from for group k.
type FetchSnapshotFunc func(ctx context.Context, k GroupKey, from int32) (io.ReadCloser, error)

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// stopCopy cancels a copy in flight (the group closes).
func (g *raftGroup) stopCopy() {
	if g.copying != nil {
		g.copying()
		g.copying = nil
	}
}
