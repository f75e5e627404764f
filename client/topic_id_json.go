package client

import (
	"encoding/json"
)

// The tables' JSON writes a topic id in the dashed UUID form their text
// prints (String), as `-o json` always has. membership.TopicID's own JSON
// form, the catalog's on gossip and disk, is 32 plain hex digits; both forms
// read back into a membership.TopicID.

// MarshalJSON writes t with its id in the dashed UUID form.
func (t ListedTopic) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Topic             string `json:"topic"`
		ID                string `json:"id"`
		Partitions        int    `json:"partitions"`
		ReplicationFactor int    `json:"replication_factor"`
		Internal          bool   `json:"internal"`
		Error             string `json:"error,omitempty"`
	}{t.Topic, t.ID.String(), t.Partitions, t.ReplicationFactor, t.Internal, t.Error})
}

// MarshalJSON writes d with its id in the dashed UUID form.
func (d DescribedTopic) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Topic      string               `json:"topic"`
		ID         string               `json:"id"`
		Partitions []DescribedPartition `json:"partitions"`
		Configs    []DescribedConfig    `json:"configs"`
		Note       string               `json:"note,omitempty"`
	}{d.Topic, d.ID.String(), d.Partitions, d.Configs, d.Note})
}
