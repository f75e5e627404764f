package membership

import (
	"strconv"
)

// Serving: one view of liveness. Gossip calls a member alive as soon as it
// joins, but Metadata (node/03_metadata.go) lists only the brokers the
// answering node's gossip sees alive, and a client may ask any node: a
// script that waited for `spool members` to show 3 alive on one node could
// be told by another, which had not heard of the third yet, that only 2
// brokers are alive. So a node, once it serves Kafka requests (admitted,
// started: SetServing), publishes in its "sv" tag how many alive brokers
// its gossip sees, which is how many its Metadata lists; the admin API's
// members show a member alive only once it serves and sees at least as
// many alive brokers as the node answering (MemberServes), and joining
// until then. A member of the version before (no FeatureServing) is
// judged by gossip alone, as before.

// TagServing is the "sv" tag: the count of alive brokers the node sees,
// set once it serves.
const TagServing = "sv"

// maxServingTagBytes is the most the "sv" tag's value takes (room is kept
// for it in buildTags: it is set after start).
const maxServingTagBytes = 10

// SetServing says this node now serves Kafka requests: its "sv" tag is
// published, and follows the alive brokers it sees from then on.
func (a *Agent) SetServing() {
	a.mu.Lock()
	a.serving = true
	a.mu.Unlock()
	a.publishTags()
}

// servingTag is the "sv" tag's value, "" while the node does not serve.
func (a *Agent) servingTag() string {
	a.mu.Lock()
	serving := a.serving
	a.mu.Unlock()
	if !serving {
		return ""
	}
	return strconv.Itoa(len(a.LiveBrokers()))
}

// servingTagStale tells whether the published "sv" tag differs from what
// it should say (Serf's event loop asks it after each member event).
func (a *Agent) servingTagStale() bool {
	want := a.servingTag()
	return want != "" && a.serf.LocalMember().Tags[TagServing] != want
}

// MemberServes tells whether m, alive in this node's gossip, also serves
// and sees at least alive brokers alive (this node's count): what a
// client asking m's Metadata would be told agrees with what this node's
// members say. A member without FeatureServing (an older version) serves
// when it is alive.
func MemberServes(m Member, alive int) bool {
	if m.Status != StatusAlive {
		return false
	}
	if !m.Has(FeatureServing) {
		return true
	}
	return m.Serving >= 0 && m.Serving >= alive
}

// parseServing reads the "sv" tag; -1 when there is none.
func parseServing(tags map[string]string) int {
	raw, ok := tags[TagServing]
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
