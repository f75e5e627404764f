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
	if err == nil || !strings.Contains(err.Error(), "it exists with another spec: it has 3 partitions, not 1") {
		t.Errorf("a create that differs from the existing topic does not say how: %v", err)
	}
	// The same create again (a retry whose first answer was lost) is a
	// success that says the topic was there; a config that differs is not.
	again, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"b"}, Partitions: 3, ReplicationFactor: 1, Configs: []string{"retention.ms=1000"}})
	if err != nil || len(again) != 1 || !again[0].Existed || !regexp.MustCompile(`^b already exists as asked \(3 partitions, id [0-9a-f-]{36}\)$`).MatchString(again[0].String()) {
		t.Errorf("the same create twice: %v %v", err, again)
	}
	// -1 partitions is the broker's num.partitions (1 here), not any.
	if _, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"b"}, Partitions: -1, ReplicationFactor: -1}); err == nil || !strings.Contains(err.Error(), "it has 3 partitions, not 1") {
		t.Errorf("a create of the default partitions over a topic of 3: %v", err)
	}
	if again, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"c"}, Partitions: -1, ReplicationFactor: -1}); err != nil || len(again) != 1 || !again[0].Existed {
		t.Errorf("a create of defaults over a topic of the defaults: %v %v", err, again)
	}
	if _, err := g.CreateTopics(ctx, CreateTopicsOptions{Names: []string{"b"}, Partitions: 3, ReplicationFactor: -1, Configs: []string{"retention.ms=2000"}}); err == nil || !strings.Contains(err.Error(), `its retention.ms is "1000", not "2000"`) {
		t.Errorf("a create with another config over an existing topic: %v", err)
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
