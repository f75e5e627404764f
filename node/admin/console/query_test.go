package console

import (
	"net/url"
	"slices"
	"testing"
)

func TestThin(t *testing.T) {
	pts := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, c := range []struct {
		n    int
		want []int
	}{
		{0, pts}, {10, pts}, {20, pts},
		{5, []int{1, 3, 5, 7, 9}},
		{4, []int{0, 3, 6, 9}},
		{1, []int{9}},
	} {
		if got := thin(pts, c.n); !slices.Equal(got, c.want) {
			t.Errorf("thin to %d: %v, want %v", c.n, got, c.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery(url.Values{"since": {"1700000000000"}, "max_points": {"150"}})
	if err != nil || q != (Query{Since: 1700000000000, MaxPoints: 150}) {
		t.Errorf("ParseQuery: %+v %v", q, err)
	}
	if back, err := ParseQuery(q.Values()); err != nil || back != q {
		t.Errorf("round trip: %+v %v", back, err)
	}
	for _, bad := range []url.Values{{"since": {"-1"}}, {"since": {"x"}}, {"max_points": {"-2"}}, {"max_points": {"100000"}}} {
		if _, err := ParseQuery(bad); err == nil {
			t.Errorf("ParseQuery(%v) accepted", bad)
		}
	}
}
