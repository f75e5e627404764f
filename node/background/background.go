// Package background owns every goroutine the node runs beside its
// requests: the node starts each with Go (or Every), and its Shutdown ends
// them all at once (Stop: one context, whose Done is the node's closing
// channel) and waits for them (Wait).
//
// Locks: Group.mu, a leaf, orders Go after Stop (none starts once Stop
// began); it is held only to start a goroutine, never while one runs.
package background

import (
	"context"
	"sync"
	"time"
)

// Group is the node's background goroutines, with one lifetime.
type Group struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // orders Go after Stop: none starts once Stop began
	halted bool
	wg     sync.WaitGroup
}

// New is a running group with nothing in it yet.
func New() *Group {
	ctx, cancel := context.WithCancel(context.Background())
	return &Group{ctx: ctx, cancel: cancel}
}

// Context is the group's lifetime: done once Stop was called.
func (b *Group) Context() context.Context { return b.ctx }

// Go runs fn in a goroutine until the group stops; fn must return once ctx
// ends. After Stop it runs nothing and reports false.
func (b *Group) Go(fn func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.halted {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(b.ctx)
	}()
	return true
}

// Every runs fn every d until the group stops.
func (b *Group) Every(d time.Duration, fn func()) bool {
	return b.Go(func(ctx context.Context) {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fn()
		}
	})
}

// Stop ends every goroutine's context; Wait then waits for them.
func (b *Group) Stop() {
	b.mu.Lock()
	b.halted = true
	b.mu.Unlock()
	b.cancel()
}

// Wait returns once every goroutine started has returned.
func (b *Group) Wait() { b.wg.Wait() }
