package membership

import (
	"sync"

	"github.com/sirupsen/logrus"
)

// fanout delivers published values to every subscriber in order. Each
// subscriber has its own queue and goroutine, so a slow reader never blocks
// the publisher (Serf's event loop); a queue past its limit drops its oldest
// value, with a warning, rather than grow without bound.
type fanout[T any] struct {
	mu     sync.Mutex
	subs   map[int]*subscriber[T]
	next   int
	closed bool
	limit  int
	log    logrus.FieldLogger
	what   string
}

type subscriber[T any] struct {
	mu      sync.Mutex
	queue   []T
	dropped int
	wake    chan struct{}
	done    chan struct{}
	out     chan T
	stop    sync.Once
}

func newFanout[T any](limit int, log logrus.FieldLogger, what string) *fanout[T] {
	if limit <= 0 {
		limit = 1 << 16
	}
	return &fanout[T]{subs: map[int]*subscriber[T]{}, limit: limit, log: log, what: what}
}

// subscribe returns a channel of every value published from now on and a
// cancel func that closes it. The channel is also closed when the fanout is.
func (f *fanout[T]) subscribe() (<-chan T, func()) {
	s := &subscriber[T]{wake: make(chan struct{}, 1), done: make(chan struct{}), out: make(chan T)}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		close(s.out)
		return s.out, func() {}
	}
	id := f.next
	f.next++
	f.subs[id] = s
	f.mu.Unlock()
	go s.run()
	cancel := func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
		s.stop.Do(func() { close(s.done) })
	}
	return s.out, cancel
}

func (f *fanout[T]) publish(v T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		s.mu.Lock()
		if len(s.queue) >= f.limit {
			s.queue = s.queue[1:]
			s.dropped++
			if s.dropped == 1 || s.dropped%1000 == 0 {
				f.log.WithField("dropped", s.dropped).Warnf("slow %s subscriber: dropping oldest events", f.what)
			}
		}
		s.queue = append(s.queue, v)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (f *fanout[T]) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for id, s := range f.subs {
		delete(f.subs, id)
		s.stop.Do(func() { close(s.done) })
	}
}

func (s *subscriber[T]) run() {
	defer close(s.out)
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.done:
				return
			}
		}
		v := s.queue[0]
		var zero T
		s.queue[0] = zero
		s.queue = s.queue[1:]
		s.mu.Unlock()
		select {
		case s.out <- v:
		case <-s.done:
			return
		}
	}
}
