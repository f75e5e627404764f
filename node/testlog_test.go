package node

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// failureLog keeps the last lines the test's nodes and clients logged and
// prints them only if the test fails: a failure in CI then shows what the
// node and the client saw, and a passing run stays quiet.
type failureLog struct {
	mu    sync.Mutex
	lines []string
	part  bytes.Buffer
}

const failureLogLines = 400

var failureLogs sync.Map // testing.TB -> *failureLog

// testFailureLog is the test's failure log, created (and armed to print on
// failure) at its first use.
func testFailureLog(t testing.TB) *failureLog {
	if l, ok := failureLogs.Load(t); ok {
		return l.(*failureLog)
	}
	l, loaded := failureLogs.LoadOrStore(t, &failureLog{})
	if !loaded {
		t.Cleanup(func() {
			failureLogs.Delete(t)
			if t.Failed() {
				fl := l.(*failureLog)
				fl.mu.Lock()
				defer fl.mu.Unlock()
				t.Logf("the last %d log lines of the test's nodes and clients:\n%s", len(fl.lines), strings.Join(fl.lines, "\n"))
			}
		})
	}
	return l.(*failureLog)
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part.Write(p)
	for {
		line, err := l.part.ReadString('\n')
		if err != nil {
			l.part.Reset()
			l.part.WriteString(line)
			break
		}
		l.lines = append(l.lines, strings.TrimRight(line, "\n"))
	}
	if over := len(l.lines) - failureLogLines; over > 0 {
		l.lines = append(l.lines[:0], l.lines[over:]...)
	}
	return len(p), nil
}
