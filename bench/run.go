package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Run bounds a bench run and says where its progress goes.
type Run struct {
	// Duration ends the run (with Count, whichever comes first); 0 means
	// no limit.
	Duration time.Duration
	// Count ends the run after this many records; 0: run for Duration.
	Count int64
	// Log receives a progress line once a second (unless Quiet) and notes
	// about the run; nil discards them.
	Log   io.Writer
	Quiet bool
}

// validate checks the bounds; limited asks for at least one of them.
func (r *Run) validate(limited bool) error {
	if r.Duration < 0 || r.Count < 0 {
		return errors.New("--duration and --count must not be negative")
	}
	if limited && r.Duration == 0 && r.Count == 0 {
		return errors.New("give --duration or --count (or both)")
	}
	return nil
}

// context bounds a run by its Duration.
func (r *Run) context(parent context.Context) (context.Context, context.CancelFunc) {
	if r.Duration > 0 {
		return context.WithTimeout(parent, r.Duration)
	}
	return context.WithCancel(parent)
}

// note writes one line to the run's log.
func (r *Run) note(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

// Cluster is where a run connects.
type Cluster struct {
	// Brokers are seed addresses, host:port.
	Brokers []string
	// Client, if not nil, makes every franz-go client of the run from the
	// run's options (cmd/spool's checks that a node answers and says what
	// to do when none does); nil: kgo.NewClient seeded with Brokers.
	Client func(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error)
}

func (c Cluster) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	if c.Client != nil {
		return c.Client(ctx, opts...)
	}
	if len(c.Brokers) == 0 {
		return nil, errors.New("no brokers given")
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return cl, nil
}

// admin is a client wrapped for admin requests, and its close.
func (c Cluster) admin(ctx context.Context) (*kadm.Client, func(), error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}
