package console

// ring is a bounded series of points, oldest overwritten first.
type ring[P any] struct {
	pts  []P
	next int // where the next point goes once full
}

// add appends p, dropping the oldest point beyond keep.
func (r *ring[P]) add(p P, keep int) {
	if len(r.pts) < keep {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.next] = p
	r.next = (r.next + 1) % len(r.pts)
}

// ordered is every point, oldest first, in a new slice.
func (r *ring[P]) ordered() []P {
	out := make([]P, 0, len(r.pts))
	out = append(out, r.pts[r.next:]...)
	return append(out, r.pts[:r.next]...)
}

// last is the newest point; ok is false when there is none.
func (r *ring[P]) last() (p P, ok bool) {
	if len(r.pts) == 0 {
		return p, false
	}
	i := r.next - 1
	if i < 0 {
		i = len(r.pts) - 1
	}
	return r.pts[i], true
}

// after is the points newer than since (unix ms), oldest first, and always
// the newest one, so that a reader asking for what is new still learns
// where the series stands; at is a point's time.
func after[P any](r *ring[P], since int64, at func(P) int64) []P {
	all := r.ordered()
	i := len(all)
	for i > 0 && at(all[i-1]) > since {
		i--
	}
	if i == len(all) && i > 0 {
		i--
	}
	return all[i:]
}
