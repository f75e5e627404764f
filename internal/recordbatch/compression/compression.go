// Package compression is recordbatch.Codecs with the codec libraries
// Kafka's clients use, reading and writing the framings they send: gzip,
// snappy raw or in xerial framing (what the Java producer writes), LZ4
// frames and zstd.
package compression

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/spool-log/spool/internal/recordbatch"
)

// Codecs implements recordbatch.Codecs.
type Codecs struct{}

var _ recordbatch.Codecs = Codecs{}

// XerialMagic starts snappy data in the xerial framing Java clients use.
var XerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	// xerialHeaderSize is the magic, then the version and the compatible
	// version as two int32s.
	xerialHeaderSize = 16
	// xerialBlockSize is snappy-java's default block size.
	xerialBlockSize = 32 << 10
)

// Decompress implements recordbatch.Codecs. CompressionNone returns src.
func (Codecs) Decompress(codec int, src []byte, limit int) ([]byte, error) {
	limited := func(r io.Reader) ([]byte, error) {
		b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if err != nil {
			return nil, err
		}
		if len(b) > limit {
			return nil, tooLarge(limit)
		}
		return b, nil
	}
	switch codec {
	case recordbatch.CompressionNone:
		if len(src) > limit {
			return nil, tooLarge(limit)
		}
		return src, nil
	case recordbatch.CompressionGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return limited(r)
	case recordbatch.CompressionSnappy:
		if !bytes.HasPrefix(src, XerialMagic) {
			return snappyBlock(src, nil, limit)
		}
		// magic, version and compatible version, then [len][block]...
		if len(src) < xerialHeaderSize {
			return nil, errors.New("snappy: truncated xerial header")
		}
		var out []byte
		for rest := src[xerialHeaderSize:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, errors.New("snappy: truncated xerial chunk length")
			}
			n := int(binary.BigEndian.Uint32(rest))
			if n < 0 || n > len(rest)-4 {
				return nil, errors.New("snappy: xerial chunk runs past the data")
			}
			var err error
			if out, err = snappyBlock(rest[4:4+n], out, limit); err != nil {
				return nil, err
			}
			rest = rest[4+n:]
		}
		return out, nil
	case recordbatch.CompressionLZ4:
		return limited(lz4.NewReader(bytes.NewReader(src)))
	case recordbatch.CompressionZstd:
		d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		out, err := limited(d)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			return nil, tooLarge(limit)
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func tooLarge(limit int) error {
	return fmt.Errorf("%w: over %d bytes", recordbatch.ErrTooLarge, limit)
}

func snappyBlock(src, dst []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > limit-len(dst) {
		return nil, tooLarge(limit)
	}
	b, err := snappy.Decode(nil, src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return append(dst, b...), nil
}

var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
})

// Compress implements recordbatch.Codecs.
func (Codecs) Compress(codec int, dst, src []byte) ([]byte, error) {
	switch codec {
	case recordbatch.CompressionGzip:
		buf := bytes.NewBuffer(dst)
		if err := writeClose(gzip.NewWriter(buf), src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return buf.Bytes(), nil
	case recordbatch.CompressionSnappy:
		// magic, version 1, compatible version 1, then [length][block]...
		dst = append(dst, XerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		dst = binary.BigEndian.AppendUint32(dst, 1)
		for len(src) > 0 {
			chunk := src[:min(len(src), xerialBlockSize)]
			src = src[len(chunk):]
			block := snappy.Encode(nil, chunk)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
			dst = append(dst, block...)
		}
		return dst, nil
	case recordbatch.CompressionLZ4:
		buf := bytes.NewBuffer(dst)
		w := lz4.NewWriter(buf)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if err := writeClose(w, src); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return buf.Bytes(), nil
	case recordbatch.CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, dst), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// writeClose writes src through a compressing writer and flushes it.
func writeClose(w io.WriteCloser, src []byte) error {
	if _, err := w.Write(src); err != nil {
		return err
	}
	return w.Close()
}
