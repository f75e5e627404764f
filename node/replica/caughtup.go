package replica

// AppliedIndex is the Raft index of the last entry this replica has
// applied (its commit point as an index, which a leader's commit index in
// its messages is comparable with), and false for a single copy, which
// has no Raft log. It waits for the group's current round, if any.
func (r *Replica) AppliedIndex() (uint64, bool) {
	if r.rg == nil {
		return 0, false
	}
	r.rg.mu.Lock()
	defer r.rg.mu.Unlock()
	return r.rg.applied, true
}
