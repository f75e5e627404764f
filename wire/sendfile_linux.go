//go:build linux

package wire

import (
	"net"
	"syscall"

	"github.com/spool-log/spool/partition"
	"golang.org/x/sys/unix"
)

const sendfileSupported = true

// sendfileRegion sends r to the socket with sendfile(2) at an explicit
// offset, so the file's shared position is neither used nor moved and many
// connections can send from one *os.File at once. The socket is
// non-blocking: on EAGAIN the runtime poller waits for it to drain, under the
// connection's write deadline, which extend refreshes per chunk. The file's
// descriptor is held (Control) while in use, so a concurrent Close cannot
// hand its number to another file mid-send.
func sendfileRegion(tcp *net.TCPConn, r partition.Region, extend func() error) (int64, error) {
	sock, err := tcp.SyscallConn()
	if err != nil {
		return 0, err
	}
	file, err := r.File.SyscallConn()
	if err != nil {
		return 0, err
	}
	var sent int64
	off := r.Position
	for sent < r.Length {
		if err := extend(); err != nil {
			return sent, err
		}
		want := min(r.Length-sent, sendfileChunk)
		var got int64
		var opErr error
		ctlErr := file.Control(func(ffd uintptr) {
			got, opErr = writeAllRaw(sock, want, func(fd int, done int64) (int, error) {
				return unix.Sendfile(fd, int(ffd), &off, int(want-done))
			})
		})
		sent += got
		if opErr == nil {
			opErr = ctlErr
		}
		if opErr != nil {
			return sent, opErr
		}
	}
	return sent, nil
}

// writeMore writes b with MSG_MORE, which holds a partial segment back for
// the record region sent next, so the few bytes of fields between regions
// leave in full segments. TCP_CORK around the whole response did the same
// at two setsockopt calls a response, and on Linux 6.x loopback cut
// sendfile's throughput by about a third.
func writeMore(tcp *net.TCPConn, b []byte) (int, error) {
	sock, err := tcp.SyscallConn()
	if err != nil {
		return 0, err
	}
	n, err := writeAllRaw(sock, int64(len(b)), func(fd int, done int64) (int, error) {
		return unix.SendmsgN(fd, b[done:], nil, nil, unix.MSG_MORE)
	})
	return int(n), err
}

// writeAllRaw calls write until it has written want bytes to the
// non-blocking socket, the runtime poller waiting whenever it is full (under
// the connection's write deadline). A write that makes no progress means the
// file behind a sendfile ended early.
func writeAllRaw(sock syscall.RawConn, want int64, write func(fd int, done int64) (int, error)) (int64, error) {
	var done int64
	var opErr error
	werr := sock.Write(func(fd uintptr) bool {
		for done < want {
			n, err := write(int(fd), done)
			if n > 0 {
				done += int64(n)
			}
			switch {
			case err == unix.EAGAIN:
				return false // wait until writable
			case err == unix.EINTR:
			case err != nil:
				opErr = err
				return true
			case n == 0:
				opErr = errRegionPastEOF
				return true
			}
		}
		return true
	})
	if opErr == nil {
		opErr = werr
	}
	return done, opErr
}
