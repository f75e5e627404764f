package node

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/replica"
)

// A follower given a snapshot that holds records (a compacted log's
// cleaned part, below the Raft log) copies them from the sender: the
// sender's admin listener streams them (serveReplicaSnapshot), the
// follower's driver reads them (fetchReplicaSnapshot), as catalog and
// leadership pulls travel. The stream is raw batches behind the snapshot's
// metadata, validated batch by batch by the reader (raftlog.StageSnapshot).

// newSnapshotClient fetches snapshots (over TLS with tlsCfg, if set, as
// the node's other pulls: peerFetch): no overall timeout, since a copy of
// a large compacted log takes as long as it takes, but a bounded wait for
// a connection and for the answer to start.
func newSnapshotClient(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       time.Minute,
	}}
}

func (n *Node) serveReplicaSnapshot(w http.ResponseWriter, r *http.Request) {
	k, err := parseGroupKey(r.URL.Query().Get("group"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if n.raft == nil {
		http.Error(w, "replication is not running", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := n.raft.WriteSnapshot(k, throttledWriter{r.Context(), w, n.copyThrottle}); err != nil {
		if errors.Is(err, replica.ErrNotHosted) {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		// Past the first byte the status is sent: the reader sees a
		// short stream, which its checks refuse.
		n.log.WithError(err).WithField("partition", k.String()).Warn("serving a replica snapshot failed")
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// fetchReplicaSnapshot opens broker from's snapshot of group k
// (replica.DriverConfig.FetchSnapshot).
func (n *Node) fetchReplicaSnapshot(ctx context.Context, k replica.GroupKey, from int32) (io.ReadCloser, error) {
	if n.agent == nil {
		return nil, errors.New("membership is not running")
	}
	m, ok := n.agent.LiveBrokers()[from]
	if !ok || m.AdminAddr == "" {
		return nil, fmt.Errorf("broker %d: no admin address known", from)
	}
	u := url.URL{Scheme: n.peerScheme, Host: m.AdminAddr, Path: admin.ReplicaSnapshotPath, RawQuery: url.Values{"group": {k.String()}}.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := n.snapshotClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("broker %d answered %s: %s", from, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp.Body, nil
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
