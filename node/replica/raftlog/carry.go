package raftlog

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// CarryVote writes into toDir, a partition directory about to be opened
// with no Raft state (a damaged replica rebuilt from its peers), the term
// and vote fromDir's group last recorded, without its commit: the
// replica forgets its log, never what it voted for, so it cannot vote a
// second time in a term it already voted in. Nothing is written when
// fromDir holds no hard state.
func CarryVote(fromDir, toDir string) error {
	hs, err := readHardState(fromDir)
	if err != nil {
		return err
	}
	if hs.GetTerm() == 0 && hs.GetVote() == 0 {
		return nil
	}
	hs = proto.CloneOf(hs)
	hs.Commit = proto.Uint64(0)
	if err := writeFileAtomic(toDir, hardStateFile, encodeHardState(hs)); err != nil {
		return fmt.Errorf("carry the vote to %s: %w", toDir, err)
	}
	return nil
}
