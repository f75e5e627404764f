package wire

import (
	"time"

	"github.com/sirupsen/logrus"
)

// Config tunes a Server. Start from DefaultConfig and fill Versions.
type Config struct {
	// MaxRequestBytes bounds one request frame (Kafka's socket.request.max.bytes).
	// A frame that claims more closes the connection, with a log line, before
	// anything is allocated for it.
	MaxRequestBytes int32

	// Versions maps an API key to the versions the broker handles. It is what
	// ApiVersions advertises and what is accepted: a request for a key that is
	// missing, or a version outside its range, closes the connection, as Kafka
	// does. ApiVersions (key 18) is answered by wire itself; if the map has no
	// entry for it, wire advertises 0–3. Ranges beyond what kmsg can decode are
	// clamped (with a warning) when the Server is built.
	Versions map[int16]VersionRange

	// QueuedMaxRequestBytes bounds the bytes of requests being read and
	// queued across all connections (Kafka's queued.max.request.bytes): the
	// buffers of frames still arriving, which grow with the bytes received
	// rather than the size a frame claims (its first 256 KiB are taken once
	// its size has arrived, then twice what has arrived, or the whole frame
	// once that is within eight times it), and of requests read but not yet
	// handled. Past it, connections stop reading from their sockets until
	// memory is returned. One frame at a time may go past it, when no frame
	// holding memory could otherwise return any (which is how a frame
	// bigger than the bound, up to MaxRequestBytes, is served), so the most
	// held is QueuedMaxRequestBytes plus one MaxRequestBytes.
	QueuedMaxRequestBytes int64

	// RequestReadTimeout bounds how long a request may take to arrive once
	// its first byte has (slowloris): a connection whose frame is not
	// whole by then is closed, with a log line. Time the server spends not
	// reading the connection (waiting for QueuedMaxRequestBytes) does not
	// count. The wait between requests is IdleTimeout's business.
	RequestReadTimeout time.Duration

	// IdleTimeout closes a connection that has neither sent a request nor had
	// one in progress for this long (Kafka's connections.max.idle.ms).
	IdleTimeout time.Duration

	// WriteTimeout bounds how long one write to a client may make no progress
	// before the connection is closed, so a stalled reader cannot pin a
	// goroutine and the file handles of a pending Fetch forever.
	WriteTimeout time.Duration

	// PipelineDepth is how many requests of one connection may be read and
	// decoded ahead of the one being handled. Read-ahead is also bounded in
	// bytes: beyond the first queued request, no more than MaxRequestBytes of
	// frames wait per connection.
	PipelineDepth int

	// Sendfile sends Fetch record bytes with sendfile(2) when the connection is
	// a *net.TCPConn on Linux. False forces the user-space copy (pread and
	// write), which TLS connections (ListenerOptions.TLS) always use.
	Sendfile bool

	// Waits reports whether handling a request may wait on something other
	// than this node's own CPU and disk: a long-poll Fetch, a group
	// rebalance. A request handled on the reading goroutine arms a timer
	// that hands reading to a new goroutine after a millisecond, so that
	// read-ahead goes on and a client that hangs up cancels the wait; arming
	// it costs each request a timer update that wakes the network poller,
	// which is most of a produce round trip's overhead with one request in
	// flight. Requests for which Waits is false are handled without it.
	// Nil means every request may wait.
	Waits func(*Request) bool

	// Log receives connection-level events (closed for a bad frame, idle,
	// handler panics). Nil means logrus's standard logger.
	Log *logrus.Entry
}

// VersionRange is an inclusive range of API versions.
type VersionRange struct{ Min, Max int16 }

// Contains reports whether v is inside the range.
func (r VersionRange) Contains(v int16) bool { return v >= r.Min && v <= r.Max }

// Default values, chosen to match Kafka's broker defaults where one exists.
const (
	DefaultMaxRequestBytes = 100 << 20 // socket.request.max.bytes
	// Kafka leaves queued.max.request.bytes unbounded; a little more than
	// one largest request, so that one fits without going past it.
	DefaultQueuedMaxRequestBytes = 128 << 20
	DefaultRequestReadTimeout    = 30 * time.Second
	DefaultIdleTimeout           = 10 * time.Minute
	DefaultWriteTimeout          = 30 * time.Second
	DefaultPipelineDepth         = 8
)

// DefaultConfig returns a working configuration with no API versions: the
// broker fills Versions with what it handles.
func DefaultConfig() Config {
	return Config{
		MaxRequestBytes:       DefaultMaxRequestBytes,
		QueuedMaxRequestBytes: DefaultQueuedMaxRequestBytes,
		RequestReadTimeout:    DefaultRequestReadTimeout,
		Versions:              map[int16]VersionRange{},
		IdleTimeout:           DefaultIdleTimeout,
		WriteTimeout:          DefaultWriteTimeout,
		PipelineDepth:         DefaultPipelineDepth,
		Sendfile:              true,
	}
}
