package retry

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type fakeTB struct{ failed string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestRunReturnsOnceTrue(t *testing.T) {
	tries := 0
	Run(t, 5*time.Second, func() error {
		tries++
		return Check(tries == 3, "try %d", tries)
	})
	if tries != 3 {
		t.Fatalf("tried %d times, want 3", tries)
	}
}

func TestRunFailsWithLastError(t *testing.T) {
	var f fakeTB
	tries := 0
	Run(&f, 50*time.Millisecond, func() error {
		tries++
		return errors.New("never")
	})
	if !strings.Contains(f.failed, "never") {
		t.Fatalf("failure %q does not carry the condition's error", f.failed)
	}
	if tries < 2 {
		t.Fatalf("tried %d times before giving up", tries)
	}
}
