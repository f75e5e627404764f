package tier

import (
	"time"

	"github.com/spool-log/spool/node/topicconfig"
)

// Hosted is a partition this node hosts, as tiered storage needs it (the
// node passes its open partitions through this).
type Hosted struct {
	Dir    string
	Topic  string
	Index  int32
	Source Source
	// Aborted lists the partition's aborted transactions for a segment's
	// upload (Partition.Aborted).
	Aborted AbortedFunc
	// ProducerSnapshot is the partition's producer state for a
	// segment's upload (Partition.ProducerSnapshot).
	ProducerSnapshot ProducerSnapshotFunc
	// SeedProducers keeps the last segment's producer snapshot beside the
	// partition (Partition.SeedProducers).
	SeedProducers func(snapshot []byte) error
	// Settings are the topic's settings now, read on each uploader pass
	// (an altered topic): remote.storage.enable, the total retention.
	Settings func() topicconfig.Settings
}

// OpenManifest opens the manifest of the partition in dir for its replica
// (replica.Config.Remote), tiered as the topic is now; nil with tiered
// storage off (the caller must not pass a nil *Manifest on as a non-nil
// interface).
func (t *Service) OpenManifest(dir string, tiered bool) (*Manifest, error) {
	if t == nil {
		return nil, nil
	}
	m, err := OpenManifest(dir)
	if err != nil {
		return nil, err
	}
	m.SetTiered(tiered)
	t.mu.Lock()
	t.manifests[dir] = m
	delete(t.hostedOnce, dir) // opening: not hosted yet
	t.mu.Unlock()
	return m, nil
}

// manifest is the manifest of the partition in dir, if it is tiered.
func (t *Service) manifest(dir string) (*Manifest, bool) {
	if t == nil {
		return nil, false
	}
	t.mu.Lock()
	m := t.manifests[dir]
	t.mu.Unlock()
	if m == nil || !m.Tiered() {
		return nil, false
	}
	return m, true
}

// partitions are the hosted partitions as the uploader sees them; each
// call refreshes whether each is tiered (an altered topic) and forgets
// the manifests of partitions closed since.
func (t *Service) partitions() []*Partition {
	hosted := t.hosted()
	out := make([]*Partition, 0, len(hosted))
	live := make(map[string]bool, len(hosted))
	for _, h := range hosted {
		live[h.Dir] = true
		t.mu.Lock()
		m := t.manifests[h.Dir]
		if m != nil {
			t.hostedOnce[h.Dir] = true
		}
		t.mu.Unlock()
		if m == nil {
			continue
		}
		m.SetTiered(h.Settings().RemoteStorage)
		out = append(out, &Partition{
			Topic: h.Topic, Index: h.Index, Source: h.Source, Manifest: m,
			Aborted: h.Aborted, ProducerSnapshot: h.ProducerSnapshot, SeedProducers: h.SeedProducers,
			Retention: func() (time.Duration, int64) {
				if s := h.Settings(); s.Delete {
					return s.RetentionAge, s.RetentionBytes
				}
				return -1, -1 // compacted only: no retention
			},
		})
	}
	t.mu.Lock()
	for dir := range t.manifests {
		if !live[dir] && t.hostedOnce[dir] {
			delete(t.manifests, dir)
			delete(t.hostedOnce, dir)
		}
	}
	t.mu.Unlock()
	return out
}
