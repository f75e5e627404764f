package hosted

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/membership"
)

// Each partition directory records the id of the topic it belongs to, in a
// small file beside the segments. A topic deleted and created again under
// the same name has a new id but the same directory names, so the name alone
// cannot tell a node that was down through the delete whether a directory
// holds the current topic or the deleted one: its saved catalog may already
// be the new one (pulled from a peer, or lost and rebuilt), and then the
// stale records would be served as the new topic's. The id settles it.
const TopicIDFile = "topic-id"

// Quarantiner moves a directory into the data dir's quarantine
// (datadir.Quarantine), logged with fields.
type Quarantiner interface {
	Move(dir, why string, fields logrus.Fields) (string, error)
}

// ClaimDir checks dir before partition p of topic (incarnation id) is
// opened from it.
// A directory holding another topic id is a deleted incarnation of the
// topic: it is moved to the quarantine (and logged), so the partition
// starts empty. It
// reports whether the id must be (re)written once the log is open: for a new
// directory, one from before ids were recorded, or one whose id file a
// crash left unreadable; each of these is taken to be the current topic's.
func ClaimDir(dir, topic string, id membership.TopicID, p int32, q Quarantiner, log logrus.FieldLogger) (record bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, TopicIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read topic id of %s: %w", dir, err)
	}
	var onDisk membership.TopicID
	if err := onDisk.UnmarshalText(bytes.TrimSpace(raw)); err != nil {
		log.WithError(err).WithFields(logrus.Fields{"topic": topic, "partition": p, "dir": dir}).
			Warn("unreadable topic id in partition directory; taking it to be the current topic's")
		return true, nil
	}
	if onDisk == id {
		return false, nil
	}
	if _, err := q.Move(dir, "directory of a deleted incarnation of the topic; the partition starts empty",
		logrus.Fields{"topic": topic, "partition": p, "stale_topic_id": onDisk.String(), "topic_id": id.String()}); err != nil {
		return false, fmt.Errorf("stale partition %s: %w", dir, err)
	}
	return true, nil
}

// RecordTopicID writes id into dir: a temp file renamed over the
// id file, so a reader never sees a torn id. Like a new log's own files it
// is not fsynced, which keeps creating thousands of partitions cheap: a
// crash that loses it leaves a directory without an id (or an empty one),
// which the next open takes to be the current topic's, the behaviour of a
// directory from before ids were recorded.
func RecordTopicID(dir string, id membership.TopicID) error {
	// The dashed UUID form, as the file has always held; it is read back
	// by UnmarshalText, which takes it with or without the dashes.
	if err := atomicfile.Replace(filepath.Join(dir, TopicIDFile), []byte(id.String()+"\n"), 0o600); err != nil {
		return fmt.Errorf("record topic id in %s: %w", dir, err)
	}
	return nil
}

// DirTopicID is the topic id recorded in a partition directory, if one is
// there and readable.
func DirTopicID(dir string) (membership.TopicID, bool) {
	raw, err := os.ReadFile(filepath.Join(dir, TopicIDFile))
	if err != nil {
		return membership.TopicID{}, false
	}
	var id membership.TopicID
	if err := id.UnmarshalText(bytes.TrimSpace(raw)); err != nil {
		return membership.TopicID{}, false
	}
	return id, true
}
