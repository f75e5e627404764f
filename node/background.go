package node

import (
	"context"
	"sync"
	"time"
)

// background owns every goroutine the node runs beside its requests: Start
// starts each with Go, and Shutdown ends them all at once (stop: one
// context, whose Done is Node.closing) and waits for them (Wait).
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // orders Go after stop: none starts once stop began
	halted bool
	// Every loop Go starts (node/compaction's cleaner among them) joins
	// the group with Add and Done.
	sync.WaitGroup
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// Go runs fn in a goroutine until the node stops; fn must return once ctx
// ends. After stop it runs nothing and reports false.
func (b *background) Go(fn func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.halted {
		return false
	}
	b.Add(1)
	go func() {
		defer b.Done()
		fn(b.ctx)
	}()
	return true
}

// Every runs fn every d until the node stops.
func (b *background) Every(d time.Duration, fn func()) bool {
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

// stop ends every goroutine's context; Wait then waits for them.
func (b *background) stop() {
	b.mu.Lock()
	b.halted = true
	b.mu.Unlock()
	b.cancel()
}
