package replication

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/replica"
)

// A follower given a snapshot that holds records (a compacted log's
// cleaned part, below the Raft log) copies them from the sender: the
// sender's admin listener streams them (ServeSnapshot), the
// follower's driver reads them (fetchSnapshot), as catalog and
// leadership pulls travel. The stream is raw batches behind the snapshot's
// metadata, validated batch by batch by the reader (raftlog.StageSnapshot).

// ServeSnapshot streams a snapshot's records (admin.ReplicaSnapshotPath)
// under the copy throttle.
func (rp *Replication) ServeSnapshot(w http.ResponseWriter, r *http.Request) {
	k, err := parseGroupKey(r.URL.Query().Get("group"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rp.driver == nil {
		http.Error(w, "replication is not running", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := rp.driver.WriteSnapshot(k, throttledWriter{r.Context(), w, rp.throttle}); err != nil {
		if errors.Is(err, replica.ErrNotHosted) {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		// Past the first byte the status is sent: the reader sees a
		// short stream, which its checks refuse.
		rp.log.WithError(err).WithField("partition", k.String()).Warn("serving a replica snapshot failed")
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// fetchSnapshot opens broker from's snapshot of group k
// (replica.DriverConfig.FetchSnapshot).
func (rp *Replication) fetchSnapshot(ctx context.Context, k replica.GroupKey, from int32) (io.ReadCloser, error) {
	a := rp.agentOrNil()
	if a == nil {
		return nil, errors.New("membership is not running")
	}
	m, ok := a.LiveBrokers()[from]
	if !ok || m.AdminAddr == "" {
		return nil, fmt.Errorf("broker %d: no admin address known", from)
	}
	body, err := rp.cfg.Peers.Open(ctx, m.AdminAddr, admin.ReplicaSnapshotPath, url.Values{"group": {k.String()}})
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", from, err)
	}
	return body, nil
}

// parseGroupKey reads replica.GroupKey.String: the topic id in hex, "/",
// the partition.
func parseGroupKey(s string) (replica.GroupKey, error) {
	var k replica.GroupKey
	topic, part, ok := strings.Cut(s, "/")
	id, err := hex.DecodeString(topic)
	if !ok || err != nil || len(id) != len(k.Topic) {
		return k, fmt.Errorf("group %q: want a 32-digit hex topic id, '/', a partition", s)
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 {
		return k, fmt.Errorf("group %q: bad partition", s)
	}
	copy(k.Topic[:], id)
	k.Partition = int32(p)
	return k, nil
}
