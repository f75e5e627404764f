package bench

// The replicated baseline's servers: a leader (--mode replicated) that takes
// record batches from the raw produce client as the append server does,
// writes each with one write(2) to its file and forwards it to two followers
// (--mode follower) over TCP, who write it and answer; the leader answers the
// client once its own write and one follower's are done (a majority of
// three), each durable first with --fsync. No protocol beyond a length
// prefix each way, no Raft, no Kafka framing between the three: what
// replication costs on this machine with nothing else in the way.
//
// Leader → follower: frames of [4-byte big-endian length][batch]. Follower →
// leader: an 8-byte big-endian count, the number of frames it holds (written,
// and with --fsync fdatasynced), cumulative, so one answer acknowledges every
// frame read so far: a follower reads all the frames that have arrived,
// writes each, syncs once and answers once (group commit). The leader's own
// fsync is a group commit too, in a goroutine of its own, overlapping the
// followers' (Raft allows the leader to persist in parallel with sending).
//
// Locks: replLeader.mu, then replLog.mu (the leader writes its log under its
// own lock, as one partition's appends are serialized). replLog.mu is held
// across write(2), and across the old file's fdatasync at a roll (once per
// RollBytes), never across a socket; replLeader.mu is held across the local
// write(2) and a send on a follower's queue (which its sender drains without
// it), never across a socket or the group commit's sync.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// replQueue bounds the frames queued for one follower's sender.
const replQueue = 4096

// replLog is one replica's log file: batches written with one write(2) each,
// rolled past roll bytes (the old file synced with fsync, then deleted, as
// the append baseline's file is), synced on demand by whoever group-commits.
type replLog struct {
	mu    sync.Mutex
	dir   string
	f     *os.File
	size  int64
	roll  int64
	rolls int
	fsync bool
	// syncFile makes f's data durable: fdatasync(2). Tests count calls.
	syncFile func(*os.File) error
}

func newReplLog(dir string, roll int64, fsync bool) (*replLog, error) {
	l := &replLog{dir: dir, roll: roll, fsync: fsync, syncFile: fdatasync}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

func (l *replLog) open() error {
	name := filepath.Join(l.dir, fmt.Sprintf("%020d.log", l.rolls))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	return nil
}

// write appends b with one write(2), rolling first if b would pass roll.
func (l *replLog) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(b)) > l.roll && l.size > 0 {
		old := l.f
		if l.fsync {
			// What the old file holds was promised durable by whoever
			// syncs next; a concurrent sync of it finds it closed and
			// counts on this one.
			if err := l.syncFile(old); err != nil {
				return fmt.Errorf("fsync %s: %w", old.Name(), err)
			}
		}
		old.Close()
		if err := os.Remove(old.Name()); err != nil {
			return fmt.Errorf("roll: %w", err)
		}
		l.rolls++
		if err := l.open(); err != nil {
			return err
		}
	}
	for len(b) > 0 {
		n, err := syscall.Write(int(l.f.Fd()), b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", l.f.Name(), err)
		}
		b = b[n:]
		l.size += int64(n)
	}
	return nil
}

// sync makes everything written so far durable (a no-op without fsync).
func (l *replLog) sync() error {
	if !l.fsync {
		return nil
	}
	l.mu.Lock()
	f := l.f
	l.mu.Unlock()
	if err := l.syncFile(f); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return nil // rolled meanwhile, and the roll synced it
		}
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

func (l *replLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// serveFollower is a follower's side of one leader connection: it writes
// each frame to log and answers with the count of frames it holds whenever
// it has read all that has arrived, syncing first.
func serveFollower(c net.Conn, log *replLog) error {
	br := bufio.NewReaderSize(c, 256<<10)
	var (
		hdr   [4]byte
		buf   []byte
		count uint64
		ack   [8]byte
	)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n < 1 || n > baselineFrameMax {
			return fmt.Errorf("frame of %d bytes from %s: want 1..%d", n, c.RemoteAddr(), baselineFrameMax)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		if err := log.write(buf); err != nil {
			return err
		}
		count++
		if wholeFrameBuffered(br) {
			continue // answer once for all that has arrived
		}
		if err := log.sync(); err != nil {
			return err
		}
		binary.BigEndian.PutUint64(ack[:], count)
		if _, err := c.Write(ack[:]); err != nil {
			return err
		}
	}
}

// wholeFrameBuffered reports whether br holds a whole next frame, so that
// reading it does not wait on the network.
func wholeFrameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	hdr, _ := br.Peek(4)
	return br.Buffered() >= 4+int(binary.BigEndian.Uint32(hdr))
}

// replLeader is the leader's log and its two followers.
type replLeader struct {
	log *replLog

	mu      sync.Mutex
	changed *sync.Cond // written, synced, an ack or a follower's end
	written uint64     // frames written to log
	synced  uint64     // frames durable in log (written, without fsync)
	peers   []*replPeer
	alive   int
	closed  bool
	kick    chan struct{} // wakes the syncer; holds one
	done    chan struct{} // the syncer's end
	syncErr error
}

// replPeer is one follower: a sender writing queued frames, a reader taking
// its acknowledgements.
type replPeer struct {
	addr  string
	conn  net.Conn
	queue chan []byte
	acked uint64 // under replLeader.mu
	dead  error  // under replLeader.mu: why it is gone
}

// newReplLeader connects to the followers and starts their senders and
// readers and, with the log's fsync, the syncer.
func newReplLeader(log *replLog, followers []string) (*replLeader, error) {
	r := &replLeader{log: log, kick: make(chan struct{}, 1), done: make(chan struct{})}
	r.changed = sync.NewCond(&r.mu)
	for _, addr := range followers {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			for _, p := range r.peers {
				p.conn.Close()
			}
			return nil, fmt.Errorf("follower %s: %w", addr, err)
		}
		r.peers = append(r.peers, &replPeer{addr: addr, conn: c, queue: make(chan []byte, replQueue)})
	}
	r.alive = len(r.peers)
	for _, p := range r.peers {
		go r.send(p)
		go r.read(p)
	}
	if log.fsync {
		go r.syncer()
	} else {
		close(r.done)
	}
	return r, nil
}

// append writes b, forwards it to every live follower and returns once it
// is durable here (per the fsync policy) and at one follower: a majority.
func (r *replLeader) append(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.failed(); err != nil {
		return err
	}
	if err := r.log.write(b); err != nil {
		return err
	}
	r.written++
	seq := r.written
	if r.log.fsync {
		select {
		case r.kick <- struct{}{}:
		default: // a sync is already due, and will cover this
		}
	} else {
		r.synced = seq
	}
	// One copy, shared by the senders: b is the connection's read buffer,
	// reused once we answer, while a slow follower may not have sent it.
	frame := slices.Clone(b)
	for _, p := range r.peers {
		if p.dead == nil {
			p.queue <- frame
		}
	}
	for !(r.synced >= seq && r.majority(seq)) {
		if err := r.failed(); err != nil {
			return err
		}
		r.changed.Wait()
	}
	return nil
}

// majority reports whether a follower holds frame seq.
func (r *replLeader) majority(seq uint64) bool {
	for _, p := range r.peers {
		if p.acked >= seq {
			return true
		}
	}
	return false
}

// failed is why appends cannot be answered any more: no follower left, the
// log's sync failed, or the leader closed.
func (r *replLeader) failed() error {
	switch {
	case r.closed:
		return net.ErrClosed
	case r.syncErr != nil:
		return r.syncErr
	case r.alive == 0:
		var errs []error
		for _, p := range r.peers {
			errs = append(errs, fmt.Errorf("follower %s: %w", p.addr, p.dead))
		}
		return fmt.Errorf("no follower left: %w", errors.Join(errs...))
	}
	return nil
}

// syncer group-commits the leader's log: each sync covers every frame
// written before it began.
func (r *replLeader) syncer() {
	defer close(r.done)
	for range r.kick {
		r.mu.Lock()
		target := r.written
		r.mu.Unlock()
		err := r.log.sync()
		r.mu.Lock()
		if err != nil {
			r.syncErr = err
		} else if target > r.synced {
			r.synced = target
		}
		r.changed.Broadcast()
		r.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// send writes p's queued frames, as many as are queued in one writev(2).
func (r *replLeader) send(p *replPeer) {
	var (
		bufs  net.Buffers
		hdrs  []byte
		batch [][]byte
	)
	for frame := range p.queue {
		batch = append(batch[:0], frame)
	more:
		for len(batch) < 256 {
			select {
			case f, ok := <-p.queue:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		hdrs = hdrs[:0]
		for _, f := range batch {
			hdrs = binary.BigEndian.AppendUint32(hdrs, uint32(len(f)))
		}
		bufs = bufs[:0]
		for i, f := range batch {
			bufs = append(bufs, hdrs[4*i:4*i+4], f)
		}
		if _, err := bufs.WriteTo(p.conn); err != nil {
			p.conn.Close() // the reader ends and says it is gone
			for range p.queue {
				// dropped: nothing more is sent to it
			}
			return
		}
	}
}

// read takes p's acknowledgements until its connection ends.
func (r *replLeader) read(p *replPeer) {
	br := bufio.NewReaderSize(p.conn, 4096)
	var ack [8]byte
	var err error
	for {
		if _, err = io.ReadFull(br, ack[:]); err != nil {
			break
		}
		n := binary.BigEndian.Uint64(ack[:])
		r.mu.Lock()
		if n > p.acked {
			p.acked = n
			r.changed.Broadcast()
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	p.dead = err
	r.alive--
	r.changed.Broadcast()
	r.mu.Unlock()
	p.conn.Close()
}

// close ends the followers' connections and the syncer; appends waiting
// fail.
func (r *replLeader) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, p := range r.peers {
		close(p.queue)
	}
	r.changed.Broadcast()
	r.mu.Unlock()
	for _, p := range r.peers {
		p.conn.Close()
	}
	if r.log.fsync {
		close(r.kick)
	}
	<-r.done
}
