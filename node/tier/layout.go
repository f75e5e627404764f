package tier

import (
	"fmt"
	"strconv"
	"strings"
)

// The object layout (DESIGN.md, "On disk"), under the configured prefix:
//
//	<prefix><topic>/<partition>/manifest              the committed manifest (manifest.go's encoding), rewritten by the leader after each record
//	<prefix><topic>/<partition>/<base %020d>-<next %020d>-<id>/<kind>  one uploaded segment's files, kind one of FileKinds
//
// The id is random per upload attempt, so an upload cut short never
// overwrites one a record points to. Topic names follow Kafka's rules
// ([a-zA-Z0-9._-], not "." or ".."), checked again here since they
// become keys.

// Layout makes the keys of one store.
type Layout struct{ Prefix string }

// PartitionPrefix is where all of a partition's objects live.
func (l Layout) PartitionPrefix(topic string, partition int32) (string, error) {
	if !validTopic(topic) || partition < 0 {
		return "", fmt.Errorf("remote storage: bad topic %q or partition %d", topic, partition)
	}
	return l.Prefix + topic + "/" + strconv.Itoa(int(partition)) + "/", nil
}

// TopicPrefix is where all of a topic's objects live.
func (l Layout) TopicPrefix(topic string) (string, error) {
	if !validTopic(topic) {
		return "", fmt.Errorf("remote storage: bad topic %q", topic)
	}
	return l.Prefix + topic + "/", nil
}

// SegmentDir is an upload's directory under the partition prefix. The
// range is in the name so that an orphan (no record points to it) is
// known to be unreferenced for ever once the manifest's end passed its
// next offset: a record of it would no longer extend the manifest.
func SegmentDir(base, next int64, id SegmentID) string {
	return fmt.Sprintf("%020d-%020d-%s/", base, next, id)
}

// ParseSegmentDir reads base, next and id from a key's part after the
// partition prefix ("<base>-<next>-<id>/<kind>").
func ParseSegmentDir(rest string) (base, next int64, id SegmentID, ok bool) {
	dir, _, found := strings.Cut(rest, "/")
	if !found || len(dir) != 20+1+20+1+32 || dir[20] != '-' || dir[41] != '-' {
		return 0, 0, id, false
	}
	b, err := strconv.ParseInt(dir[:20], 10, 64)
	if err != nil || b < 0 {
		return 0, 0, id, false
	}
	nx, err := strconv.ParseInt(dir[21:41], 10, 64)
	if err != nil || nx <= b {
		return 0, 0, id, false
	}
	var raw [16]byte
	for i := range 16 {
		hi, lo := unhex(dir[42+2*i]), unhex(dir[43+2*i])
		if hi < 0 || lo < 0 {
			return 0, 0, id, false
		}
		raw[i] = byte(hi<<4 | lo)
	}
	return b, nx, raw, true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

func validTopic(t string) bool {
	if len(t) == 0 || len(t) > 249 || t == "." || t == ".." {
		return false
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
