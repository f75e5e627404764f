package group

import "time"

// Clock is the source of time and timers for the coordinator. Timer
// callbacks run on their own goroutine and must not be called with any
// coordinator lock held.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending callback that can be cancelled. Stop may lose the race
// with a callback that has already started; callbacks therefore re-check
// that they are still current before acting.
type Timer interface {
	Stop() bool
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
