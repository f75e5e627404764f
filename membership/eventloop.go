package membership

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/hashicorp/serf/serf"
	"github.com/sirupsen/logrus"
)

// Serf user events and queries Spool uses. Names are short: they count
// against the user-event and query size limits.
const (
	eventTopic         = "spool-topic"      // payload: one TopicEntry, JSON
	eventTopicHint     = "spool-topic-hint" // payload: topicHint, JSON
	queryRoster        = "spool-roster"     // payload: encodeRoster; reply: encodeRoster or fetchMe
	queryCatalogDigest = "spool-cat-digest" // payload: 8-byte digest; reply: 8-byte digest
)

// maxQueryBytes bounds query payloads and replies: Serf sends replies as a
// single UDP packet, and memberlist's packets are 1400 bytes.
const maxQueryBytes = 1200

// fetchMe is the roster reply meaning "too big for a packet: fetch it".
var fetchMe = []byte{0}

// topicHint announces a catalog operation too big for a user event; peers
// whose entry for Name is older pull the catalog from Node.
type topicHint struct {
	Name    string `json:"name"`
	Lamport uint64 `json:"lamport"`
	Auto    bool   `json:"auto,omitempty"`
	Origin  int32  `json:"origin"`
	Node    string `json:"node"`
	// Led is how many partitions the entry marks led (topic_led.go): a
	// mark leaves the version as it was, so it alone tells a peer holding
	// the same version that it lacks marks.
	Led int32 `json:"led,omitempty"`
}

func (a *Agent) eventLoop() {
	defer a.eventWG.Done()
	for {
		select {
		case e := <-a.eventCh:
			switch e := e.(type) {
			case serf.MemberEvent:
				a.handleMemberEvent(e)
			case serf.UserEvent:
				a.handleUserEvent(e)
			case *serf.Query:
				a.handleQuery(e)
			}
		case <-a.eventsDone:
			return
		}
	}
}

func (a *Agent) handleMemberEvent(e serf.MemberEvent) {
	a.alive.Store(nil) // IsAlive looks again
	typ, ok := eventTypeFromSerf(e.Type)
	if !ok {
		return
	}
	now := time.Now()
	for _, sm := range e.Members {
		a.guard.observe(sm, typ == EventReap)
		m, ok := memberFromSerf(sm)
		if !ok {
			a.log.WithField("member", sm.Name).Warn("gossip member without a valid broker id tag; ignored")
			continue
		}
		self := m.Name == a.cfg.NodeName
		if m.Status == StatusAlive && (typ == EventJoin || typ == EventUpdate) {
			a.observeRaftAddr(m) // raftaddrs.go
			a.considerClusterID(sm.Name, sm.Tags[TagClusterID])
			if a.stageRoster([]RosterEntry{{ID: m.BrokerID, Gen: m.Gen}}) {
				_ = a.saveStagedRoster() // logged; retried by the sync loop
				a.requestSync(syncRequest{kind: syncPersistRoster})
			}
			if !self && m.RosterDigest != "" && m.RosterDigest != a.roster.Digest() {
				a.requestSync(syncRequest{kind: syncRosterWith, peer: m.Name})
			}
			if !self && typ == EventJoin {
				a.requestSync(syncRequest{kind: syncCatalogWith, peer: m.Name})
			}
		}
		a.log.WithFields(logrus.Fields{"member": m.Name, "member_broker": m.BrokerID, "status": m.Status, "gossip": m.GossipAddr}).
			Infof("member %s", typ)
		a.memberEvents.publish(MemberEvent{Type: typ, Member: m, Time: now})
	}
	if a.servingTagStale() {
		a.requestSync(syncRequest{kind: syncPublishTags}) // serving.go
	}
	members := a.Members()
	if dups := aliveDuplicates(members); len(dups) > 0 {
		a.log.WithField("duplicates", dups).Error("alive members share a broker id; refusing to trust either (see Health)")
	}
	counts := map[MemberStatus]int{StatusAlive: 0, StatusFailed: 0, StatusLeft: 0}
	for _, m := range members {
		counts[m.Status]++
	}
	for status, n := range counts {
		metrics.SetGaugeWithLabels([]string{"spool", "membership", "members"}, float32(n),
			[]metrics.Label{{Name: "status", Value: string(status)}})
	}
}

func (a *Agent) handleUserEvent(e serf.UserEvent) {
	switch e.Name {
	case eventTopic:
		var entry TopicEntry
		if err := json.Unmarshal(e.Payload, &entry); err != nil {
			a.log.WithError(err).Warn("undecodable topic event; anti-entropy will repair")
			return
		}
		_, _ = a.mergeCatalog([]TopicEntry{entry}, "event") // logged; retried
	case eventUser:
		handleEntryEvent(a, a.users, e.Payload)
	case eventACL:
		handleEntryEvent(a, a.acls, e.Payload)
	case eventSetting:
		handleEntryEvent(a, a.settings, e.Payload)
	case eventQuota:
		handleEntryEvent(a, a.quotas, e.Payload)
	case eventTopicHint:
		var h topicHint
		if err := json.Unmarshal(e.Payload, &h); err != nil {
			a.log.WithError(err).Warn("undecodable topic hint; anti-entropy will repair")
			return
		}
		hinted := Stamp{Lamport: h.Lamport, Auto: h.Auto, Origin: h.Origin}
		if (!a.catalog.holdsWrite(h.Name, hinted) || a.catalog.ledCount(h.Name) < h.Led) && h.Node != a.cfg.NodeName {
			a.requestSync(syncRequest{kind: syncCatalogPull, peer: h.Node})
		}
	}
}

func (a *Agent) handleQuery(q *serf.Query) {
	switch q.Name {
	case queryRoster:
		if entries, err := decodeRoster(q.Payload); err == nil {
			if a.stageRoster(entries) {
				a.requestSync(syncRequest{kind: syncPersistRoster})
			}
		} else if len(q.Payload) > 1 {
			a.log.WithError(err).WithField("from", q.SourceNode()).Warn("bad roster in query")
		}
		reply := encodeRoster(a.roster.Entries())
		if len(reply) > maxQueryBytes {
			reply = fetchMe
		}
		if err := q.Respond(reply); err != nil {
			a.log.WithError(err).Debug("respond to roster query")
		}
	case queryCatalogDigest:
		ours := a.catalog.Digest()
		if err := q.Respond(binary.BigEndian.AppendUint64(nil, ours)); err != nil {
			a.log.WithError(err).Debug("respond to catalog digest query")
		}
		if len(q.Payload) == 8 && binary.BigEndian.Uint64(q.Payload) != ours && q.SourceNode() != a.cfg.NodeName {
			// Pull both ways: the asker pulls ours on the difference too.
			a.requestSync(syncRequest{kind: syncCatalogPull, peer: q.SourceNode()})
		}
	}
}

// mergeCatalog folds entries from source into the catalog, persists it and
// tells watchers, all under persistMu so watchers see changes in the order
// they were applied. The change is made on a copy and saved first: only once
// the file holds it does the catalog everyone reads take it, so a node never
// acts on (opens, serves, deletes for) an entry its next start would not
// know. A failed save leaves the catalog as it was and returns an error
// wrapping ErrNotDurable; entries from peers are kept and merged again on
// every anti-entropy round until they are saved (retryCatalog).
func (a *Agent) mergeCatalog(entries []TopicEntry, source string) ([]TopicChange, error) {
	a.persistMu.Lock()
	defer a.persistMu.Unlock()
	next := a.catalog.clone()
	changes, err := next.Merge(entries)
	if err != nil {
		a.log.WithError(err).WithField("source", source).Warn("ignored invalid catalog entries")
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if err := saveCatalog(a.catalogPath, next); err != nil {
		names := make([]string, len(changes))
		for i, ch := range changes {
			names[i] = ch.New.Name
		}
		a.log.WithError(err).WithFields(logrus.Fields{"source": source, "topics": names}).
			Error("persist catalog failed; the change is not applied")
		metrics.IncrCounter([]string{"spool", "membership", "catalog", "persist_failures"}, 1)
		if source != "local" {
			a.keepForRetry(entries)
		}
		return nil, fmt.Errorf("catalog change of %v: %w: %w", names, ErrNotDurable, err)
	}
	a.catalog.adopt(next)
	for _, ch := range changes {
		a.log.WithFields(logrus.Fields{"topic": ch.New.Name, "topic_id": ch.New.ID.String(), "deleted": ch.New.Deleted,
			"lamport": ch.New.Lamport, "origin": ch.New.Origin, "source": source}).Info("catalog changed")
		a.topicEvents.publish(ch)
	}
	return changes, nil
}

// keepForRetry remembers peers' entries whose save failed, joined per name
// (a join loses nothing a later merge would keep), so the list is bounded
// by the number of topics. Called with
// persistMu held.
func (a *Agent) keepForRetry(entries []TopicEntry) {
	if a.catalogRetry == nil {
		a.catalogRetry = make(map[string]TopicEntry)
	}
	for _, e := range entries {
		if e.validate() != nil {
			continue // Merge skips it too
		}
		if cur, ok := a.catalogRetry[e.Name]; ok {
			a.catalogRetry[e.Name] = joinTopic(cur, e)
		} else {
			a.catalogRetry[e.Name] = e.clone()
		}
	}
}

// retryCatalog merges again the peers' entries whose save failed, on every
// anti-entropy round until the save succeeds. Merging is idempotent, so
// entries that arrived again meanwhile cost nothing.
func (a *Agent) retryCatalog() {
	a.persistMu.Lock()
	pending := make([]TopicEntry, 0, len(a.catalogRetry))
	for _, e := range a.catalogRetry {
		pending = append(pending, e)
	}
	a.catalogRetry = nil
	a.persistMu.Unlock()
	if len(pending) == 0 {
		return
	}
	if _, err := a.mergeCatalog(pending, "retry"); err == nil {
		a.log.WithField("entries", len(pending)).Info("catalog change saved on retry")
	}
}
