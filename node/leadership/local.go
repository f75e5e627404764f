package leadership

import (
	"crypto/rand"
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Path is where a node serves its claims to peers, on its admin listener.
// Query: inc and since (the incarnation and version the asker holds) for
// a delta; without them, or when they do not match, the answer is full.
const Path = "/internal/leadership"

// Local is this node's own claims, versioned: every change to the set
// moves the version up by one, and each claim remembers the version that
// last changed it, so a peer holding version v gets only what changed
// after v. Partitions no longer led are remembered (as removals) up to a
// bound; a peer behind the oldest forgotten removal gets the whole set.
type Local struct {
	self int32
	inc  uint64

	mu      sync.Mutex
	version uint64
	claims  map[Key]*versioned
	removed map[Key]uint64 // key -> version that removed it
	floor   uint64         // deltas exist only from floor on
	pass    uint64         // counts Set calls, to find claims a Set left out
}

type versioned struct {
	c    Claim
	ver  uint64 // the version that last changed c
	pass uint64 // the last Set that had c
}

// minRemovals is how many removals Local keeps at least; it keeps as many
// as it has claims when that is more.
const minRemovals = 1024

// NewLocal starts an empty claim set for broker self, with a random
// incarnation: a restarted node's versions start again, and the
// incarnation tells its peers that what they hold is from a past life.
func NewLocal(self int32) *Local {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	inc := binary.BigEndian.Uint64(b[:]) >> 1
	if inc == 0 {
		inc = 1
	}
	return &Local{self: self, inc: inc, claims: map[Key]*versioned{}, removed: map[Key]uint64{}}
}

// Set replaces the claim set with claims (those whose Leader is not this
// node are ignored: a node speaks only for what it leads) and reports
// whether anything changed, in which case the version moved up.
func (l *Local) Set(claims []Claim) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.version + 1
	l.pass++
	changed := false
	kept := 0
	for _, c := range claims {
		if c.Leader != l.self || c.Partition < 0 || c.Epoch < 0 {
			continue
		}
		k := c.Key()
		old, ok := l.claims[k]
		switch {
		case ok && old.pass == l.pass:
			continue // listed twice: the first one counts
		case ok && old.c.sameAs(c):
			old.pass = l.pass
		default:
			l.claims[k] = &versioned{c: c.clone(), ver: next, pass: l.pass}
			delete(l.removed, k)
			changed = true
		}
		kept++
	}
	if kept < len(l.claims) {
		for k, v := range l.claims {
			if v.pass != l.pass {
				delete(l.claims, k)
				l.removed[k] = next
				changed = true
			}
		}
	}
	if !changed {
		return false
	}
	l.version = next
	if len(l.removed) > max(minRemovals, len(l.claims)) {
		// Forget the removals; a peer behind now gets the whole set.
		clear(l.removed)
		l.floor = next
	}
	return true
}

// Tag is the gossip tag value naming this node's incarnation and version.
func (l *Local) Tag() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return FormatTag(l.inc, l.version)
}

// Message is the answer to a peer holding version since of incarnation
// inc: the changes after since, or the whole set when the peer holds
// another incarnation, a version this node does not have, or one older
// than the removals it remembers.
func (l *Local) Message(inc, since uint64) Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := Message{Broker: l.self, Inc: l.inc, Version: l.version}
	if inc != l.inc || since > l.version || since < l.floor {
		m.Full = true
		m.Claims = make([]Claim, 0, len(l.claims))
		for _, v := range l.claims {
			m.Claims = append(m.Claims, v.c)
		}
		return m
	}
	m.Since = since
	for _, v := range l.claims {
		if v.ver > since {
			m.Claims = append(m.Claims, v.c)
		}
	}
	for k, ver := range l.removed {
		if ver > since {
			m.Removed = append(m.Removed, k)
		}
	}
	return m
}

// ServeHTTP answers GET Path?inc=&since= with Message, encoded.
func (l *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	inc, _ := strconv.ParseUint(q.Get("inc"), 36, 64)
	since, _ := strconv.ParseUint(q.Get("since"), 36, 64)
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(Encode(l.Message(inc, since)))
}

// MaxTagBytes bounds the tag value: two base-36 uint64s and a dot.
const MaxTagBytes = 27

// FormatTag is the "lv" tag value for incarnation inc at version.
func FormatTag(inc, version uint64) string {
	return strconv.FormatUint(inc, 36) + "." + strconv.FormatUint(version, 36)
}

// ParseTag reads a tag value; ok is false for an empty or malformed one.
func ParseTag(s string) (inc, version uint64, ok bool) {
	a, b, found := strings.Cut(s, ".")
	if !found || len(s) > MaxTagBytes {
		return 0, 0, false
	}
	inc, err1 := strconv.ParseUint(a, 36, 64)
	version, err2 := strconv.ParseUint(b, 36, 64)
	if err1 != nil || err2 != nil || inc == 0 {
		return 0, 0, false
	}
	return inc, version, true
}
