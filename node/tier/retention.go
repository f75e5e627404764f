package tier

import (
	"context"
	"fmt"
	"time"
)

// remoteRetention moves the remote log start past the remote segments the
// topic's total retention (retention.ms / retention.bytes) expired, as a
// record (every replica applies it), and returns how many went. Their
// objects are then orphans the sweep removes. The size counted is the
// remote segments' plus the local closed segments above the remote end
// (the active segment is left out: retention deletes less, never more).
func (u *Uploader) remoteRetention(ctx context.Context, p *Partition, now time.Time) (int, error) {
	if p.Retention == nil {
		return 0, nil
	}
	age, limit := p.Retention()
	segs := p.Manifest.Segments()
	if len(segs) == 0 {
		return 0, nil
	}
	n := 0
	if age >= 0 {
		cutoff := now.Add(-age).UnixMilli()
		for n < len(segs) && segs[n].MaxTimestamp < cutoff {
			n++
		}
	}
	if limit >= 0 {
		end := segs[len(segs)-1].Next
		var total int64
		for _, s := range segs {
			total += s.Size
		}
		for _, s := range p.Source.ClosedSegments() {
			if s.Base >= end {
				total += s.Size
			}
		}
		m := 0
		for m < len(segs) && total-segs[m].Size >= limit {
			total -= segs[m].Size
			m++
		}
		n = max(n, m)
	}
	if n == 0 {
		return 0, nil
	}
	start := segs[n-1].Next
	rctx, cancel := context.WithTimeout(ctx, u.cfg.RecordTimeout)
	defer cancel()
	if err := p.Source.RecordRemote(rctx, EncodeStart(start)); err != nil {
		return 0, fmt.Errorf("record remote start %d: %w", start, err)
	}
	u.putManifest(ctx, p)
	return n, nil
}

// SweepOrphans removes the objects of p's partition that no record refers
// to and none ever can: an upload directory not in the manifest whose
// range ends at or below the manifest's end (a record of it would no
// longer extend the manifest, on any replica, since every replica applies
// the same records in the same order). A directory above that may be an
// upload still under way and is left. Returns the objects removed.
func (u *Uploader) SweepOrphans(ctx context.Context, p *Partition) (int, error) {
	prefix, err := u.layout.PartitionPrefix(p.Topic, p.Index)
	if err != nil {
		return 0, err
	}
	objs, err := u.store.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	live := make(map[SegmentID]bool)
	for _, s := range p.Manifest.Segments() {
		live[s.ID] = true
	}
	end := p.Manifest.End()
	removed := 0
	for _, o := range objs {
		rest := o.Key[len(prefix):]
		_, next, id, ok := ParseSegmentDir(rest)
		if !ok || live[id] || next > end {
			continue
		}
		if err := u.store.Delete(ctx, o.Key); err != nil {
			return removed, err
		}
		removed++
	}
	if removed > 0 {
		u.count([]string{"tier", "orphans", "removed"}, float32(removed))
		u.log.WithField("topic", p.Topic).WithField("partition", p.Index).WithField("objects", removed).Info("remote storage: unreferenced objects removed")
	}
	return removed, nil
}

// DeleteTopic removes every object of topic (a deleted topic).
func DeleteTopic(ctx context.Context, store ObjectStore, layout Layout, topic string) (int, error) {
	prefix, err := layout.TopicPrefix(topic)
	if err != nil {
		return 0, err
	}
	objs, err := store.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	for i, o := range objs {
		if err := store.Delete(ctx, o.Key); err != nil {
			return i, err
		}
	}
	return len(objs), nil
}
