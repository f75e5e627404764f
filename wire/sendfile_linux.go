//go:build linux

package wire

import (
	"net"

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
			werr := sock.Write(func(sfd uintptr) bool {
				for got < want {
					n, err := unix.Sendfile(int(sfd), int(ffd), &off, int(want-got))
					if n > 0 {
						got += int64(n)
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

// setCork sets TCP_CORK, which holds partial segments until it is cleared.
func setCork(tcp *net.TCPConn, on bool) error {
	sock, err := tcp.SyscallConn()
	if err != nil {
		return err
	}
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := sock.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v)
	}); err != nil {
		return err
	}
	return serr
}
