package membership

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// Growing a topic keeps its id and its existing replica lists, places the
// new partitions as a create of the larger count would, and reaches every
// node and every node's saved catalog.
func TestAlterTopicGrowsPartitionsEverywhere(t *testing.T) {
	nodes := cluster(t, 3)
	a, c := nodes[0], nodes[2]
	created, err := a.CreateTopic(TopicSpec{Name: "grow", Partitions: 2, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 5*time.Second, sameCatalog(nodes...))

	grown, err := c.AlterTopic("grow", c.GrowPartitions(5, nil))
	if err != nil {
		t.Fatal(err)
	}
	if grown.ID != created.ID || grown.Partitions != 5 {
		t.Fatalf("grown: id %s partitions %d, want id %s and 5", grown.ID, grown.Partitions, created.ID)
	}
	want := PlaceTopic("grow", 5, []int32{1, 2, 3}, 2)
	for p := range 5 {
		exp := want[p]
		if p < 2 {
			exp = created.Replicas[p]
		}
		if fmt.Sprint(grown.Replicas[p]) != fmt.Sprint(exp) {
			t.Errorf("partition %d replicas %v, want %v", p, grown.Replicas[p], exp)
		}
	}
	retry.Run(t, 5*time.Second, func() error {
		for _, n := range nodes {
			e, ok := n.Topic("grow")
			if !ok || e.Partitions != 5 || e.ID != created.ID {
				return fmt.Errorf("%s sees %+v", n.cfg.NodeName, e)
			}
		}
		return nil
	})
	for _, n := range nodes {
		saved, err := loadCatalog(n.catalogPath)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := saved.Get("grow"); e.Partitions != 5 {
			t.Errorf("%s saved %d partitions, want 5", n.cfg.NodeName, e.Partitions)
		}
	}

	if _, err := a.AlterTopic("grow", a.GrowPartitions(5, nil)); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("grow to the same count: %v, want ErrInvalidPartitions", err)
	}
	if _, err := a.AlterTopic("grow", a.GrowPartitions(6, [][]int32{{1, 9}})); !errors.Is(err, ErrGrowAssignment) {
		t.Errorf("assignment naming broker 9: %v, want ErrGrowAssignment", err)
	}
	if _, err := a.AlterTopic("grow", a.GrowPartitions(6, [][]int32{{3}})); !errors.Is(err, ErrGrowAssignment) {
		t.Errorf("assignment of 1 replica for factor 2: %v, want ErrGrowAssignment", err)
	}
	explicit, err := a.AlterTopic("grow", a.GrowPartitions(6, [][]int32{{3, 1}}))
	if err != nil || fmt.Sprint(explicit.Replicas[5]) != "[3 1]" {
		t.Fatalf("explicit assignment: %v, replicas %v", err, explicit.Replicas)
	}
	if _, err := a.AlterTopic("nope", a.GrowPartitions(6, nil)); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
}
