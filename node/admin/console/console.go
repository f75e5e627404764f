package console

import (
	"context"
	"sync"
	"time"

	"github.com/spool-log/spool/adminapi"
)

// Console is a node's console: the history, the event timeline, the page.
type Console struct {
	cfg     Config
	history *History
	events  *Events
}

// New is the console over cfg; zero fields take DefaultConfig's values.
func New(cfg Config) *Console {
	def := DefaultConfig()
	if cfg.Interval <= 0 {
		cfg.Interval = def.Interval
	}
	if cfg.Keep <= 0 {
		cfg.Keep = def.Keep
	}
	if cfg.MaxSeries <= 0 {
		cfg.MaxSeries = def.MaxSeries
	}
	if cfg.MaxGroups <= 0 {
		cfg.MaxGroups = def.MaxGroups
	}
	if cfg.IdleStop <= 0 {
		cfg.IdleStop = def.IdleStop
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = def.PeerTimeout
	}
	if cfg.Events <= 0 {
		cfg.Events = def.Events
	}
	return &Console{cfg: cfg, history: NewHistory(cfg), events: NewEvents(cfg.Events)}
}

// History is the console's sampled history.
func (c *Console) History() *History { return c.history }

// Sampling is Running for the node's request paths: a counter only the
// console reads (bytes fetched per partition) is kept only while it is on,
// at the cost of one atomic load when it is off.
func (c *Console) Sampling() bool { return c.history.on.Load() }

// Local is this node's series, as q asks.
func (c *Console) Local(q Query) Local { return c.history.Local(c.cfg.NodeID, q) }

// State is the cluster-wide state as q asks: this node's Local and
// every live peer's, asked in parallel, each bounded by PeerTimeout. A
// peer that does not answer is named in State.Nodes; the rest stands.
func (c *Console) State(ctx context.Context, q Query) State {
	locals := map[int32]Local{c.cfg.NodeID: c.Local(q)}
	errs := map[int32]string{}
	if c.cfg.Peers != nil {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, id := range c.cfg.Peers.Others() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pctx, cancel := context.WithTimeout(ctx, c.cfg.PeerTimeout)
				defer cancel()
				l, err := c.cfg.Peers.Local(pctx, id, q)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs[id] = err.Error()
					return
				}
				locals[id] = l
			}()
		}
		wg.Wait()
	}
	return Merge(time.Now().UnixMilli(), locals, errs)
}

// RecordEvent adds a membership event to the timeline.
func (c *Console) RecordEvent(ev adminapi.MemberEvent) { c.events.Add(ev) }

// Events is the timeline, oldest first.
func (c *Console) Events() []adminapi.MemberEvent { return c.events.List() }
