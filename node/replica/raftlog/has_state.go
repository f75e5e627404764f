package raftlog

import (
	"errors"
	"os"
	"path/filepath"
)

// HasState says whether the partition in dir has Raft state (Open has run
// there): a replica without it starts its group afresh or joins one.
func HasState(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, snapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
