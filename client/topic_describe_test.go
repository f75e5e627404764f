package client

import (
	"bytes"
	"strings"
	"testing"
)

// A topic whose partitions have an even number of replicas is described
// with a note saying what that costs; an odd one without.
func TestDescribeNotesAnEvenFactor(t *testing.T) {
	for _, c := range []struct {
		replicas []int32
		note     []string
	}{
		{[]int32{1}, nil},
		{[]int32{1, 2}, []string{"replication factor 2 is even", "2 of its 2 replicas", "no more failures than a factor of 1", "2 survive none"}},
		{[]int32{1, 2, 3}, nil},
		{[]int32{1, 2, 3, 4}, []string{"replication factor 4 is even", "3 of its 4"}},
	} {
		d := DescribedTopic{Topic: "t", Partitions: []DescribedPartition{{Partition: 0, Replicas: c.replicas}, {Partition: 1, Replicas: c.replicas}}}
		d.Note = EvenFactorNote(d.Partitions)
		var out bytes.Buffer
		d.WriteTable(&out)
		if c.note == nil {
			if d.Note != "" || strings.Contains(out.String(), "note:") {
				t.Errorf("replicas %v: note %q, table %q; want none", c.replicas, d.Note, out.String())
			}
			continue
		}
		for _, s := range c.note {
			if !strings.Contains(d.Note, s) {
				t.Errorf("replicas %v: note %q does not say %q", c.replicas, d.Note, s)
			}
		}
		if !strings.Contains(out.String(), "note: "+d.Note+"\n") {
			t.Errorf("replicas %v: the table does not show the note:\n%s", c.replicas, out.String())
		}
	}
}
