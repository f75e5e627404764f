package moves

import "github.com/spool-log/spool/node/hosted"

// FromHosted is a partition this node hosts (node/hosted) as the Mover
// sees it.
func FromHosted(p *hosted.Partition) Hosted {
	return Hosted{Topic: p.Topic, Index: p.Index, ID: p.TopicID, Replica: p.Replica}
}

// AllFromHosted is FromHosted of each of ps.
func AllFromHosted(ps []*hosted.Partition) []Hosted {
	out := make([]Hosted, len(ps))
	for i, p := range ps {
		out[i] = FromHosted(p)
	}
	return out
}
