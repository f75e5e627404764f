package wire

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("wire: server closed")

// Server accepts Kafka client connections and serves them with a Handler.
type Server struct {
	cfg     Config
	handler Handler
	log     *logrus.Entry
	decoder decoder
	stats   stats
	budget  *byteBudget
	// readStep is how far ahead a connection's read deadline is set: the
	// shorter of IdleTimeout and RequestReadTimeout.
	readStep time.Duration

	closing atomic.Bool
	// shutdown is closed with closing set, to stop readers waiting for
	// budget.
	shutdown chan struct{}
	mu       sync.Mutex
	lns      map[net.Listener]struct{}
	conns    map[*conn]struct{}
	connsWG  sync.WaitGroup
}

// NewServer builds a Server. Zero or negative limits in cfg take their
// defaults; version ranges kmsg cannot decode are clamped with a warning.
func NewServer(cfg Config, h Handler) *Server {
	def := DefaultConfig()
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = def.MaxRequestBytes
	}
	if cfg.QueuedMaxRequestBytes <= 0 {
		cfg.QueuedMaxRequestBytes = def.QueuedMaxRequestBytes
	}
	if cfg.RequestReadTimeout <= 0 {
		cfg.RequestReadTimeout = def.RequestReadTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = def.IdleTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = def.WriteTimeout
	}
	if cfg.PipelineDepth <= 0 {
		cfg.PipelineDepth = def.PipelineDepth
	}
	if cfg.Log == nil {
		cfg.Log = logrus.NewEntry(logrus.StandardLogger())
	}
	s := &Server{
		cfg:     cfg,
		handler: h,
		log:     cfg.Log,
		lns:     map[net.Listener]struct{}{},
		conns:   map[*conn]struct{}{},
		budget:  newByteBudget(cfg.QueuedMaxRequestBytes),

		readStep: min(cfg.IdleTimeout, cfg.RequestReadTimeout),
		shutdown: make(chan struct{}),
	}
	versions := clampVersions(cfg.Versions, s.log)
	s.decoder = decoder{versions: versions, apiVersions: newAPIVersionsAnswerer(versions)}
	return s
}

// clampVersions copies the table, keeping only what kmsg can decode and what
// wire can answer for ApiVersions.
func clampVersions(in map[int16]VersionRange, log *logrus.Entry) map[int16]VersionRange {
	out := make(map[int16]VersionRange, len(in)+1)
	for key, rng := range in {
		req := kmsg.RequestForKey(key)
		if req == nil {
			log.WithField("api_key", key).Warn("not advertising an API key kmsg does not know")
			continue
		}
		limit := VersionRange{Min: 0, Max: req.MaxVersion()}
		if key == apiKeyApiVersions {
			limit = apiVersionsServable
		}
		clamped := VersionRange{Min: max(rng.Min, limit.Min), Max: min(rng.Max, limit.Max)}
		if clamped != rng {
			log.WithFields(logrus.Fields{"api_key": key, "api": kmsg.NameForKey(key),
				"asked_min": rng.Min, "asked_max": rng.Max, "min": clamped.Min, "max": clamped.Max}).
				Warn("clamping API version range to what can be decoded")
		}
		if clamped.Min > clamped.Max {
			continue
		}
		out[key] = clamped
	}
	if _, ok := out[apiKeyApiVersions]; !ok {
		out[apiKeyApiVersions] = apiVersionsDefault
	}
	return out
}

// Serve accepts connections on ln until Shutdown or a listener error; it
// returns ErrServerClosed after Shutdown. Serve may be called for several
// listeners at once.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, ListenerOptions{})
}

func (s *Server) serve(ln net.Listener, opts ListenerOptions) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Out of descriptors and the like: wait, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.WithError(err).WithField("retry_in", backoff).Warn("accept failed")
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.stats.accepted.Add(1)
		if opts.Admit != nil {
			if d := opts.Admit(nc.RemoteAddr()); d > 0 {
				s.stats.connectionsThrottled.Add(1)
				time.AfterFunc(d, func() { nc.Close() })
				continue
			}
		}
		c := newConn(s, nc, opts)
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.connsWG.Add(1)
		s.stats.open.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// connDone unregisters a connection whose goroutines have all ended.
func (s *Server) connDone(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.stats.open.Add(-1)
	s.connsWG.Done()
}

// Shutdown stops accepting, stops reading new requests, lets the requests
// already read be handled and their responses written, then closes the
// connections. If ctx ends first, the remaining connections are closed at
// once (their handlers' contexts cancelled) and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing.Swap(true) {
		close(s.shutdown)
	}
	for ln := range s.lns {
		ln.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.stopReading()
	}

	done := make(chan struct{})
	go func() {
		s.connsWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.close(ctx.Err())
	}
	s.mu.Unlock()
	return ctx.Err()
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	st := s.stats.snapshot()
	st.QueuedRequestBytes = s.budget.inUse()
	return st
}
