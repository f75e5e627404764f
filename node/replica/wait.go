package replica

// Long-polling fetches register a channel with every replica they ask for
// (one channel for all); the replica signals it when the high watermark
// moves or the replica closes. A channel has room for one signal, so a
// burst of appends costs one wake-up, and an append never blocks on a slow
// fetch.

// AddWaiter registers ch for a non-blocking signal on every advance of the
// high watermark. ch should have a buffer of one.
func (r *Replica) AddWaiter(ch chan struct{}) {
	r.mu.Lock()
	if r.waiters == nil {
		r.waiters = make(map[chan struct{}]struct{})
	}
	r.waiters[ch] = struct{}{}
	r.mu.Unlock()
}

// RemoveWaiter unregisters ch.
func (r *Replica) RemoveWaiter(ch chan struct{}) {
	r.mu.Lock()
	delete(r.waiters, ch)
	r.mu.Unlock()
}

func (r *Replica) notifyLocked() {
	for ch := range r.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Waiting is how many long polls are registered.
func (r *Replica) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.waiters)
}
