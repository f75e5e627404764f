// Package retry polls an eventually-true condition in tests, in the manner
// of Serf's testutil/retry: the condition is tried every few milliseconds
// until it holds, and the test fails with its last error once the deadline
// has passed. Tests never sleep for a condition; they poll it with this.
package retry

import (
	"fmt"
	"time"
)

// TB is the part of testing.TB that Run needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// wait is the pause between tries: short enough that a test does not idle,
// long enough that polling does not steal the CPU the condition waits for.
const wait = 20 * time.Millisecond

// Run calls fn until it returns nil; once timeout has passed, it fails t
// with fn's last error.
func Run(t TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", timeout, err)
			return
		}
		time.Sleep(wait)
	}
}

// Check turns a condition into Run's currency: nil when ok holds, else an
// error saying what is awaited.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}
