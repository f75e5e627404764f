package membership

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/serf/serf"
)

type syncKind int

const (
	syncPersistRoster    syncKind = iota // write the roster and republish "rv"
	syncRosterWith                       // exchange rosters with peer
	syncCatalogWith                      // compare catalog digests with peer, pull if different
	syncCatalogPull                      // pull peer's catalog
	syncPersistClusterID                 // write the adopted cluster id and republish "cid"
	syncPublishTags                      // republish the tags ("sv" after a member event)
)

type syncRequest struct {
	kind syncKind
	peer string
}

// requestSync queues work for the sync loop without blocking the caller
// (often Serf's event loop). If the queue is full the request is dropped: the
// periodic anti-entropy round covers it.
func (a *Agent) requestSync(r syncRequest) {
	select {
	case a.syncCh <- r:
	default:
		a.log.WithField("kind", r.kind).Debug("sync queue full; leaving it to anti-entropy")
	}
}

// syncLoop runs everything that waits on the network or the disk outside
// Serf's event loop: roster persistence and tag updates, roster and catalog
// exchanges, and the periodic anti-entropy round.
func (a *Agent) syncLoop() {
	defer a.wg.Done()
	ticker := time.NewTicker(a.cfg.SyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-a.shutdownCh:
			return
		case r := <-a.syncCh:
			// Collapse what queued up meanwhile: one exchange per peer and
			// kind is enough.
			batch := map[syncRequest]bool{r: true}
			order := []syncRequest{r}
		drain:
			for {
				select {
				case r := <-a.syncCh:
					if !batch[r] {
						batch[r] = true
						order = append(order, r)
					}
				default:
					break drain
				}
			}
			for _, r := range order {
				if a.isShutdown() {
					return
				}
				a.runSync(r)
			}
		case <-ticker.C:
			a.antiEntropyRound()
		}
	}
}

func (a *Agent) runSync(r syncRequest) {
	switch r.kind {
	case syncPersistRoster:
		_ = a.persistRoster() // logged; retried next round
		return
	case syncPersistClusterID:
		a.persistClusterID()
		return
	case syncPublishTags:
		a.publishTags()
		return
	}
	peer, ok := a.aliveMember(r.peer)
	if !ok {
		return
	}
	switch r.kind {
	case syncRosterWith:
		a.exchangeRoster(peer)
	case syncCatalogWith:
		a.compareCatalog(peer)
	case syncCatalogPull:
		a.pullCatalog(peer)
	}
}

func (a *Agent) aliveMember(name string) (Member, bool) {
	for _, m := range a.Members() {
		if m.Name == name && m.Status == StatusAlive {
			return m, true
		}
	}
	return Member{}, false
}

// antiEntropyRound compares the catalog with one random live peer, the
// roster with one live peer whose "rv" tag differs from ours, and our cluster
// id with every live member's "cid" tag.
func (a *Agent) antiEntropyRound() {
	_ = a.persistRoster() // logged; retried next round
	a.retryCatalog()
	retryEntries(a, a.users)
	retryEntries(a, a.acls)
	retryEntries(a, a.settings)
	retryEntries(a, a.quotas)
	// Tags are gossiped state, so a missed update event is repaired here.
	for _, m := range a.serf.Members() {
		if m.Status == serf.StatusAlive {
			a.considerClusterID(m.Name, m.Tags[TagClusterID])
		}
	}
	a.persistClusterID()
	var peers, rosterPeers []Member
	digest := a.roster.Digest()
	for _, m := range a.Members() {
		if m.Status != StatusAlive || m.Name == a.cfg.NodeName {
			continue
		}
		peers = append(peers, m)
		if m.RosterDigest != digest {
			rosterPeers = append(rosterPeers, m)
		}
	}
	if len(peers) > 0 {
		a.compareCatalog(peers[rand.IntN(len(peers))])
	}
	if len(rosterPeers) > 0 {
		a.exchangeRoster(rosterPeers[rand.IntN(len(rosterPeers))])
	}
}

// stageRoster queues the entries that would change the roster for the next
// persistRoster, without touching the disk (the caller is often Serf's event
// loop), and reports whether there were any.
func (a *Agent) stageRoster(entries []RosterEntry) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	staged := false
	for _, e := range entries {
		if !a.roster.wouldChange(e) {
			continue
		}
		if a.rosterPending == nil {
			a.rosterPending = make(map[int32]RosterEntry)
		}
		if cur, ok := a.rosterPending[e.ID]; ok {
			e = cur.join(e)
		}
		a.rosterPending[e.ID] = e
		staged = true
	}
	return staged
}

// persistRoster saves the roster with the staged entries merged in, and only
// then lets the roster (which placement hashes over) take them and
// republishes the "rv" tag. A failed save keeps the staged entries for the
// next anti-entropy round (what gossip saw stays true) and returns an error
// wrapping ErrNotDurable. The operator's entries, op, are saved with them but
// never kept: a failed operation is not carried out later.
func (a *Agent) persistRoster(op ...RosterEntry) error {
	if err := a.saveRoster(op); err != nil {
		return err
	}
	a.publishTags()
	return nil
}

// saveRoster is persistRoster's save, under persistMu.
func (a *Agent) saveRoster(op []RosterEntry) error {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	if a.isShutdown() {
		if len(op) > 0 {
			return errShutdown
		}
		return nil
	}
	return a.saveRosterLocked(op)
}

// saveStagedRoster saves and applies the staged entries without touching
// the tags, for Serf's event loop: a broker seen joining is in the roster
// as soon as it is saved, and the sync loop republishes "rv".
func (a *Agent) saveStagedRoster() error {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	return a.saveRosterLocked(nil)
}

// saveRosterLocked is persistRoster's save; called with persistMu held.
func (a *Agent) saveRosterLocked(op []RosterEntry) error {
	a.mu.Lock()
	pending := a.rosterPending
	a.rosterPending = nil
	a.mu.Unlock()
	next := a.roster.clone()
	staged := make([]RosterEntry, 0, len(pending))
	for _, e := range pending {
		staged = append(staged, e)
	}
	changed := next.Merge(staged)
	changed = next.Merge(op) || changed
	if !changed {
		return nil
	}
	if err := saveRoster(a.rosterPath, next); err != nil {
		a.log.WithError(err).Error("persist roster failed; the change is not applied")
		metrics.IncrCounter([]string{"spool", "membership", "roster", "persist_failures"}, 1)
		a.stageRoster(staged)
		return fmt.Errorf("roster change: %w: %w", ErrNotDurable, err)
	}
	a.roster.adopt(next)
	return nil
}

// query sends a Serf query to one peer and returns its first reply, or nil
// after SyncTimeout.
func (a *Agent) query(peer Member, name string, payload []byte) []byte {
	resp, err := a.serf.Query(name, payload, &serf.QueryParam{FilterNodes: []string{peer.Name}, Timeout: a.cfg.SyncTimeout})
	if err != nil {
		a.log.WithError(err).WithField("peer", peer.Name).Debugf("query %s", name)
		return nil
	}
	defer resp.Close()
	select {
	case r, ok := <-resp.ResponseCh():
		if ok {
			return r.Payload
		}
	case <-a.shutdownCh:
	}
	return nil
}

// exchangeRoster sends our roster to peer in a query and merges the one it
// replies with; a roster too big for a packet goes over Fetch instead.
func (a *Agent) exchangeRoster(peer Member) {
	payload := encodeRoster(a.roster.Entries())
	if len(payload) > maxQueryBytes {
		payload = fetchMe
	}
	reply := a.query(peer, queryRoster, payload)
	var entries []RosterEntry
	switch {
	case len(reply) > 1:
		var err error
		if entries, err = decodeRoster(reply); err != nil {
			a.log.WithError(err).WithField("peer", peer.Name).Warn("bad roster reply")
			return
		}
	default: // no reply or fetchMe
		raw, err := a.fetch(peer, RosterPath)
		if err != nil {
			a.log.WithError(err).WithField("peer", peer.Name).Warn("fetch roster")
			return
		}
		var f rosterFileJSON
		if err := json.Unmarshal(raw, &f); err != nil {
			a.log.WithError(err).WithField("peer", peer.Name).Warn("decode fetched roster")
			return
		}
		if len(f.Entries) > maxRosterEntries {
			return
		}
		entries = f.Entries
	}
	if a.stageRoster(entries) {
		_ = a.persistRoster() // logged; retried next round
	}
}

// compareCatalog asks peer for its catalog digest and pulls its catalog when
// it differs from ours.
func (a *Agent) compareCatalog(peer Member) {
	ours := a.catalog.Digest()
	reply := a.query(peer, queryCatalogDigest, binary.BigEndian.AppendUint64(nil, ours))
	if len(reply) != 8 || binary.BigEndian.Uint64(reply) == a.catalog.Digest() {
		return
	}
	a.pullCatalog(peer)
}

func (a *Agent) pullCatalog(peer Member) {
	raw, err := a.fetch(peer, CatalogPath)
	if err != nil {
		a.log.WithError(err).WithField("peer", peer.Name).Warn("fetch catalog for anti-entropy")
		return
	}
	snap, err := decodeCatalogSnapshot(raw)
	if err != nil {
		a.log.WithError(err).WithField("peer", peer.Name).Warn("decode fetched catalog")
		return
	}
	_, _ = a.mergeCatalog(snap.Topics, "anti-entropy:"+peer.Name) // logged; the next round pulls again
	_ = a.mergeUsers(snap.Users, "anti-entropy:"+peer.Name)       // likewise
	_ = mergeEntries(a, a.acls, snap.ACLs, "anti-entropy:"+peer.Name)
	_ = mergeEntries(a, a.settings, snap.Settings, "anti-entropy:"+peer.Name)
	_ = mergeEntries(a, a.quotas, snap.Quotas, "anti-entropy:"+peer.Name)
}

func (a *Agent) fetch(peer Member, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.SyncTimeout)
	defer cancel()
	go func() {
		select {
		case <-a.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return a.cfg.Fetch(ctx, peer, path)
}
