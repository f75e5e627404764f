package console

import (
	"errors"
	"net/url"
	"strconv"
)

// Query is what a reader asks of the history.
type Query struct {
	// Since (unix ms) leaves out the points at or before it, but each
	// series' newest; 0 asks for all.
	Since int64
	// MaxPoints, when positive, thins each series to at most that many
	// points, evenly, the newest kept: a page that opens asks for what
	// its charts can draw, not for every second of every series.
	MaxPoints int
}

// maxMaxPoints bounds MaxPoints to what a series can hold anyway.
const maxMaxPoints = 1 << 16

// ParseQuery reads ?since=MS&max_points=N.
func ParseQuery(v url.Values) (Query, error) {
	var q Query
	if s := v.Get("since"); s != "" {
		since, err := strconv.ParseInt(s, 10, 64)
		if err != nil || since < 0 {
			return q, errors.New("since: want unix milliseconds")
		}
		q.Since = since
	}
	if s := v.Get("max_points"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > maxMaxPoints {
			return q, errors.New("max_points: want a count from 0 (all) to 65536")
		}
		q.MaxPoints = n
	}
	return q, nil
}

// Values is q as a query string, for asking a peer.
func (q Query) Values() url.Values {
	v := url.Values{"since": {strconv.FormatInt(q.Since, 10)}}
	if q.MaxPoints > 0 {
		v.Set("max_points", strconv.Itoa(q.MaxPoints))
	}
	return v
}

// thin keeps at most n of points (all when n <= 0), one in every
// ceil(len/n) counted back from the newest, which is always kept.
func thin[P any](points []P, n int) []P {
	if n <= 0 || len(points) <= n {
		return points
	}
	stride := (len(points) + n - 1) / n
	out := make([]P, 0, n)
	for i := (len(points) - 1) % stride; i < len(points); i += stride {
		out = append(out, points[i])
	}
	return out
}
