// Package testlog keeps the last lines a test's components logged and
// prints them only if the test fails: a failure in CI then shows what the
// nodes, replicas and clients saw, and a passing run stays quiet.
package testlog

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// Lines is how many of the last lines a test keeps.
const Lines = 400

// Log is one test's kept lines, an io.Writer.
type Log struct {
	mu    sync.Mutex
	lines []string
	part  bytes.Buffer
}

var rings sync.Map // testing.TB -> *Log

// For is t's failure log, created (and armed to print when t fails) at its
// first use; every writer a test asks for is the same one.
func For(t testing.TB) *Log {
	if r, ok := rings.Load(t); ok {
		return r.(*Log)
	}
	r, loaded := rings.LoadOrStore(t, &Log{})
	if !loaded {
		t.Cleanup(func() {
			rings.Delete(t)
			if t.Failed() {
				rg := r.(*Log)
				rg.mu.Lock()
				defer rg.mu.Unlock()
				t.Logf("the last %d log lines of the test's components:\n%s", len(rg.lines), strings.Join(rg.lines, "\n"))
			}
		})
	}
	return r.(*Log)
}

func (r *Log) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.part.Write(p)
	for {
		line, err := r.part.ReadString('\n')
		if err != nil {
			r.part.Reset()
			r.part.WriteString(line)
			break
		}
		r.lines = append(r.lines, strings.TrimRight(line, "\n"))
	}
	if over := len(r.lines) - Lines; over > 0 {
		r.lines = append(r.lines[:0], r.lines[over:]...)
	}
	return len(p), nil
}
