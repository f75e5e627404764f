package share

import (
	"reflect"
	"testing"
)

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(Snapshot{Epoch: 3, SPSO: 10, Runs: []Run{{Available, 1, 4}, {Acknowledged, 2, 1}, {Archived, 5, 9}}}.Encode())
	f.Add(Snapshot{}.Encode())
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		again, err := DecodeSnapshot(s.Encode())
		if err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("round trip: %+v -> %+v, %v", s, again, err)
		}
	})
}
