//go:build !linux

package wire

import (
	"errors"
	"net"

	"github.com/spool-log/spool/partition"
)

// Off Linux every region takes the copy path.
const sendfileSupported = false

func sendfileRegion(*net.TCPConn, partition.Region, func() error) (int64, error) {
	return 0, errors.New("sendfile is only used on linux")
}

func writeMore(tcp *net.TCPConn, b []byte) (int, error) { return tcp.Write(b) }
