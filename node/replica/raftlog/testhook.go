package raftlog

import "sync/atomic"

// beforeAppend, when set, runs at the start of every Storage.Append with the
// log's directory.
var beforeAppend atomic.Pointer[func(dir string)]

// SetBeforeAppend makes every Storage.Append first call fn with its log's
// directory, until called again with nil. It is for tests of the callers,
// which hold a replica's round there as a slow disk would.
func SetBeforeAppend(fn func(dir string)) {
	if fn == nil {
		beforeAppend.Store(nil)
		return
	}
	beforeAppend.Store(&fn)
}
