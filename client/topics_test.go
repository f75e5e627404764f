package client

import (
	"regexp"
	"strings"
	"testing"
)

func TestCreateListDeleteTopics(t *testing.T) {
	g, _ := testCluster(t)
	ctx := testContext(t)
	created, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"b", "a"}, Partitions: 3, ReplicationFactor: -1, Configs: []string{"retention.ms=1000"}})
	if err != nil || len(created) != 2 || !regexp.MustCompile(`^[ab] \(3 partitions, id [0-9a-f-]{36}\)$`).MatchString(created[0].String()) {
		t.Fatalf("CreateTopics: %v %v", err, created)
	}
	// One topic refused, the other created: both said.
	created, err = g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"a", "c"}, Partitions: 1, ReplicationFactor: -1})
	if len(created) != 1 || created[0].Topic != "c" || err == nil || !strings.HasPrefix(err.Error(), "a: TOPIC_ALREADY_EXISTS") {
		t.Errorf("CreateTopics of an existing and a new topic: %v %v", err, created)
	}
	if _, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"wide"}, Partitions: 1, ReplicationFactor: 3}); err == nil || !strings.Contains(err.Error(), "only 1 broker alive ([1])") {
		t.Errorf("a replication factor of 3 on one node: %v", err)
	}
	for _, bad := range []CreateTopicsOptions{{Partitions: 0, ReplicationFactor: -1}, {Partitions: 1, ReplicationFactor: 0}, {Partitions: 1, ReplicationFactor: -1, Configs: []string{"novalue"}}} {
		bad.Names = []string{"bad"}
		if _, err := g.CreateTopics(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	topics, err := g.ListTopics(ctx)
	var names []string
	for _, tp := range topics {
		names = append(names, tp.Topic)
	}
	if err != nil || strings.Join(names, " ") != "a b c" {
		t.Errorf("ListTopics: %v %v", err, names)
	}
	described, err := g.DescribeTopics(ctx, []string{"a"})
	if err != nil || len(described) != 1 || len(described[0].Partitions) != 3 || *described[0].Partitions[2].End != 0 {
		t.Fatalf("DescribeTopics: %v %+v", err, described)
	}
	deleted, err := g.DeleteTopics(ctx, []string{"b", "nope"})
	if strings.Join(deleted, " ") != "b" || err == nil || !strings.Contains(err.Error(), "nope: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Errorf("DeleteTopics of a topic and a missing one: %v %v", err, deleted)
	}
}
