package hosted

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spool-log/spool/membership"
)

// PartitionDir is the directory of partition p of topic in dataDir:
// <topic>-<p>.
func PartitionDir(dataDir, topic string, p int32) string {
	return filepath.Join(dataDir, topic+"-"+strconv.FormatInt(int64(p), 10))
}

// ParsePartitionDir splits a <topic>-<n> directory name. The topic may itself
// contain dashes, so the partition is what follows the last one.
func ParsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[i+1:] {
		return "", 0, false
	}
	topic := name[:i]
	if membership.ValidateTopicName(topic) != nil {
		return "", 0, false
	}
	return topic, int32(n), true
}
