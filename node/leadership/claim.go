package leadership

import "slices"

// MaxReplicas bounds an ISR or offline list in a claim (Kafka's replica
// lists are far shorter; a longer one is a corrupt or hostile peer).
const MaxReplicas = 255

// Key names one partition of one incarnation of a topic.
type Key struct {
	Topic     [16]byte
	Partition int32
}

// Claim is a leader's word on a partition it leads.
type Claim struct {
	Topic     [16]byte
	Partition int32
	Leader    int32
	Epoch     int32
	ISR       []int32
	Offline   []int32
	// Voters are the group's voters as the leader applied its
	// configuration (both sides of a joint one): unlike the ISR, a voter
	// that lags is still one. Empty from a peer that predates them
	// (codec.go).
	Voters []int32
}

// Key is the partition the claim is about.
func (c Claim) Key() Key { return Key{c.Topic, c.Partition} }

func (c Claim) sameAs(o Claim) bool {
	return c.Leader == o.Leader && c.Epoch == o.Epoch && slices.Equal(c.ISR, o.ISR) && slices.Equal(c.Offline, o.Offline) &&
		slices.Equal(c.Voters, o.Voters)
}

func (c Claim) clone() Claim {
	c.ISR, c.Offline, c.Voters = slices.Clone(c.ISR), slices.Clone(c.Offline), slices.Clone(c.Voters)
	if c.ISR == nil {
		c.ISR = []int32{}
	}
	if c.Offline == nil {
		c.Offline = []int32{}
	}
	return c
}
