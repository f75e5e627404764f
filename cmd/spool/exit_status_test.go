package main

import (
	"errors"
	"fmt"
	"testing"
)

func TestExitStatus(t *testing.T) {
	refused := withExitStatus(exitRefused, errors.New("refused by the cluster"))
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("bind: address already in use"), 1},
		{refused, exitRefused},
		{fmt.Errorf("wrapped: %w", refused), exitRefused},
		{withExitStatus(exitRefused, nil), 0},
	} {
		if got := exitStatus(tc.err); got != tc.want {
			t.Errorf("exitStatus(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
