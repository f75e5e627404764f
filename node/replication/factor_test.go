package replication

import (
	"errors"
	"strings"
	"testing"

	"github.com/spool-log/spool/node/topics"
)

func TestOddFactorAtMost(t *testing.T) {
	for _, c := range []struct {
		asked, brokers int
		want           int16
	}{
		{3, 1, 1},
		{3, 2, 1}, // two brokers: one copy, not a group of 2
		{3, 3, 3},
		{3, 5, 3},
		{2, 5, 1}, // an even configured factor is lowered too
		{4, 5, 3},
		{4, 4, 3},
		{5, 4, 3},
		{5, 6, 5},
		{6, 9, 5},
		{7, 7, 7},
		{1, 0, 1}, // no roster yet: still one copy
		{3, 0, 1},
		{0, 3, 1},
		{-1, 3, 1},
	} {
		if got := OddFactorAtMost(c.asked, c.brokers); got != c.want {
			t.Errorf("OddFactorAtMost(%d asked, %d brokers) = %d, want %d", c.asked, c.brokers, got, c.want)
		}
	}
}

func TestCheckOddFactor(t *testing.T) {
	for _, c := range []struct {
		rf      int
		refused bool
		says    []string
	}{
		{1, false, nil},
		{2, true, []string{"replication factor 2 is even", "2 of 2", "no more failures than a factor of 1", "a group of 2 survives none", "1 or 3"}},
		{3, false, nil},
		{4, true, []string{"replication factor 4 is even", "3 of 4", "no more failures than a factor of 3", "3 or 5"}},
		{5, false, nil},
		{6, true, []string{"replication factor 6 is even", "4 of 6"}},
		{64, true, []string{"replication factor 64 is even"}},
	} {
		err := CheckOddFactor(c.rf)
		if !c.refused {
			if err != nil {
				t.Errorf("factor %d refused: %v", c.rf, err)
			}
			continue
		}
		var ee *EvenFactorError
		if !errors.As(err, &ee) || ee.Factor != c.rf {
			t.Errorf("factor %d: %v, want an EvenFactorError (INVALID_REPLICATION_FACTOR)", c.rf, err)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(ee.Error(), s) {
				t.Errorf("factor %d: message %q does not say %q", c.rf, ee.Error(), s)
			}
		}
	}
}

func TestEvenFactorCount(t *testing.T) {
	specs := []topics.Spec{
		{Name: "one", Partitions: 4, ReplicationFactor: 1},
		{Name: "two", Partitions: 3, ReplicationFactor: 2},
		{Name: "three", Partitions: 6, ReplicationFactor: 3},
		{Name: "four", Partitions: 2, ReplicationFactor: 4},
	}
	ts, ps, names := evenFactorCount(specs)
	if ts != 2 || ps != 5 || strings.Join(names, ",") != "two,four" {
		t.Fatalf("even factors: %d topics, %d partitions %v; want 2 topics (two,four), 5 partitions", ts, ps, names)
	}
	if ts, ps, names := evenFactorCount(specs[:1]); ts != 0 || ps != 0 || names != nil {
		t.Fatalf("no even factor: %d topics, %d partitions %v", ts, ps, names)
	}
}
