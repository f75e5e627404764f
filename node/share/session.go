package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// A share session (KIP-932) is a member's set of partitions on one node,
// kept between its ShareFetch requests: epoch 0 opens one (closing any
// before it), every later request names the next epoch and adds or
// forgets partitions, -1 closes it and releases what the member holds
// here.

type sessionKey struct{ group, member string }

type session struct {
	epoch    int32 // the epoch the next request must name
	lastUsed int64 // UnixNano of its last request
	parts    map[TopicPartition]struct{}
	order    []TopicPartition // parts in the order they were added
}

// FinalEpoch is the session epoch that closes a session.
const FinalEpoch = -1

// Session opens (epoch 0) or moves on (epoch > 0) member's session,
// adding add and forgetting forget, and returns its partitions in order.
// Epoch -1 is CloseSession's.
func (p *Partitions) Session(group, member string, epoch int32, add, forget []TopicPartition) ([]TopicPartition, *kerr.Error) {
	k := sessionKey{group, member}
	p.mu.Lock()
	s := p.sessions[k]
	switch {
	case epoch == 0:
		if s == nil && len(p.sessions) >= p.cfg.MaxSessions {
			// Full: the sessions of members gone silent (killed without
			// closing them) make room, their records released.
			idle := p.idleSessionsLocked()
			p.mu.Unlock()
			for k, old := range idle {
				p.release(k.group, k.member, old.order)
			}
			p.mu.Lock()
			if len(p.sessions) >= p.cfg.MaxSessions {
				p.mu.Unlock()
				return nil, kerr.ShareSessionLimitReached
			}
			s = p.sessions[k]
		}
		old := s
		s = &session{parts: map[TopicPartition]struct{}{}}
		p.sessions[k] = s
		if old != nil {
			p.mu.Unlock()
			p.release(group, member, old.order) // a new session starts from nothing held
			p.mu.Lock()
		}
	case s == nil:
		p.mu.Unlock()
		return nil, kerr.ShareSessionNotFound
	case epoch != s.epoch:
		p.mu.Unlock()
		return nil, kerr.InvalidShareSessionEpoch
	}
	for _, tp := range forget {
		if _, ok := s.parts[tp]; ok {
			delete(s.parts, tp)
			for i, o := range s.order {
				if o == tp {
					s.order = append(s.order[:i], s.order[i+1:]...)
					break
				}
			}
		}
	}
	for _, tp := range add {
		if _, ok := s.parts[tp]; !ok {
			if len(s.order) >= p.cfg.MaxSessionPartitions {
				p.mu.Unlock()
				return nil, kerr.InvalidRequest
			}
			s.parts[tp] = struct{}{}
			s.order = append(s.order, tp)
		}
	}
	s.epoch = nextEpoch(epoch)
	s.lastUsed = p.now().UnixNano()
	out := append([]TopicPartition(nil), s.order...)
	p.mu.Unlock()
	return out, nil
}

// CheckSession moves on member's session for a ShareAcknowledge naming
// epoch (> 0), which neither adds nor forgets partitions.
func (p *Partitions) CheckSession(group, member string, epoch int32) *kerr.Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions[sessionKey{group, member}]
	switch {
	case epoch == 0:
		return kerr.InvalidShareSessionEpoch
	case s == nil:
		return kerr.ShareSessionNotFound
	case epoch != s.epoch:
		return kerr.InvalidShareSessionEpoch
	}
	s.epoch = nextEpoch(epoch)
	s.lastUsed = p.now().UnixNano()
	return nil
}

// idleSessionsLocked removes and returns the sessions unused for longer
// than the session timeout.
func (p *Partitions) idleSessionsLocked() map[sessionKey]*session {
	cutoff := p.now().Add(-p.cfg.SessionTimeout).UnixNano()
	out := map[sessionKey]*session{}
	for k, s := range p.sessions {
		if s.lastUsed < cutoff {
			out[k] = s
			delete(p.sessions, k)
		}
	}
	return out
}

// CloseSession ends member's session and releases every record it holds
// on the session's partitions. A session that does not exist is
// SHARE_SESSION_NOT_FOUND; the caller applies the request's
// acknowledgements first either way.
func (p *Partitions) CloseSession(group, member string) *kerr.Error {
	k := sessionKey{group, member}
	p.mu.Lock()
	s := p.sessions[k]
	delete(p.sessions, k)
	p.mu.Unlock()
	if s == nil {
		return kerr.ShareSessionNotFound
	}
	p.release(group, member, s.order)
	return nil
}

func (p *Partitions) release(group, member string, tps []TopicPartition) {
	cfg := p.configs(group)
	for _, tp := range tps {
		sp, _ := p.get(Key{group, tp}, false)
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		sp.releaseMemberLocked(member, cfg.DeliveryLimit, &p.Stats)
		sp.mu.Unlock()
	}
}

func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}
