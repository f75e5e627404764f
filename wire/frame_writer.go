package wire

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/spool-log/spool/partition"
)

// Bytes are written in bounded chunks, each under a fresh write deadline, so
// a slow but progressing client is served while one that stops reading is
// cut off after WriteTimeout.
const (
	writeChunk    = 1 << 20
	sendfileChunk = 4 << 20
	copyBufSize   = 256 << 10
)

// errRegionPastEOF means a region extends beyond its file: the frame's size
// prefix already promised those bytes, so the connection cannot continue.
var errRegionPastEOF = errors.New("record region extends past the end of its segment file")

// frameWriter writes response frames to one connection.
type frameWriter struct {
	w io.Writer
	// tcp is set when record regions may go with sendfile(2).
	tcp *net.TCPConn
	// refresh, if set, extends the write deadline before each chunk.
	refresh func() error
	stats   *stats
	copyBuf []byte
}

func (fw *frameWriter) extend() error {
	if fw.refresh == nil {
		return nil
	}
	return fw.refresh()
}

// writeBytes writes b wholly.
func (fw *frameWriter) writeBytes(b []byte) error {
	for len(b) > 0 {
		if err := fw.extend(); err != nil {
			return err
		}
		n, err := fw.w.Write(b[:min(len(b), writeChunk)])
		b = b[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFetch writes a Fetch frame: buffered bytes, with each split's regions
// sent in place. Bytes followed by a region sent with sendfile go with
// MSG_MORE, so they leave in full segments with the region's first bytes.
func (fw *frameWriter) writeFetch(f *fetchFrame) error {
	prev := 0
	for _, s := range f.splits {
		if err := fw.writeBeforeRegions(f.buf[prev:s.at], s.regions); err != nil {
			return err
		}
		for _, r := range s.regions {
			if err := fw.sendRegion(r); err != nil {
				return err
			}
		}
		prev = s.at
	}
	return fw.writeBytes(f.buf[prev:])
}

// writeBeforeRegions writes b, with MSG_MORE when bytes of regions follow
// by sendfile: held back with nothing after it, b would wait.
func (fw *frameWriter) writeBeforeRegions(b []byte, regions []partition.Region) error {
	follow := false
	for _, r := range regions {
		follow = follow || r.Length > 0
	}
	if !follow || fw.tcp == nil || !sendfileSupported {
		return fw.writeBytes(b)
	}
	for len(b) > 0 {
		if err := fw.extend(); err != nil {
			return err
		}
		n, err := writeMore(fw.tcp, b[:min(len(b), writeChunk)])
		b = b[n:]
		if err != nil {
			return err
		}
	}
	return nil
}

// sendRegion sends one file region: with sendfile(2) when possible, else by
// pread into a buffer and write. Neither touches the file's shared offset.
func (fw *frameWriter) sendRegion(r partition.Region) error {
	if r.Length == 0 {
		return nil
	}
	if r.File == nil || r.Position < 0 || r.Length < 0 {
		return fmt.Errorf("invalid record region (file %v, position %d, length %d)", r.File != nil, r.Position, r.Length)
	}
	if fw.tcp != nil && sendfileSupported {
		n, err := sendfileRegion(fw.tcp, r, fw.extend)
		fw.stats.sendfileBytes.Add(n)
		if err != nil {
			return fmt.Errorf("sendfile %s at %d: %w", r.File.Name(), r.Position+n, err)
		}
		return nil
	}
	n, err := fw.copyRegion(r)
	fw.stats.copyBytes.Add(n)
	if err != nil {
		return fmt.Errorf("copy %s at %d: %w", r.File.Name(), r.Position+n, err)
	}
	return nil
}

// copyRegion is the user-space fallback, and TLS connections' only path:
// the bytes must be encrypted on their way (see ListenerOptions.TLS).
func (fw *frameWriter) copyRegion(r partition.Region) (int64, error) {
	if fw.copyBuf == nil {
		fw.copyBuf = make([]byte, copyBufSize)
	}
	var sent int64
	for sent < r.Length {
		chunk := fw.copyBuf[:min(int64(len(fw.copyBuf)), r.Length-sent)]
		n, err := r.File.ReadAt(chunk, r.Position+sent)
		if n < len(chunk) {
			if err == nil || errors.Is(err, io.EOF) {
				err = errRegionPastEOF
			}
			return sent, err
		}
		if err := fw.writeBytes(chunk); err != nil {
			return sent, err
		}
		sent += int64(n)
	}
	return sent, nil
}
