package compression

import (
	"bytes"
	"testing"

	"github.com/spool-log/spool/internal/recordbatch"
)

// codecSeeds are real compressions of a few payloads in every codec, in
// the framings clients send.
func codecSeeds(t testing.TB) [][2]any {
	payloads := [][]byte{
		{},
		[]byte("a"),
		bytes.Repeat([]byte("spool"), 20_000), // several xerial blocks
		recordbatch.Simple(1000, []byte("x"), []byte("yy"))[recordbatch.HeaderSize:],
	}
	var out [][2]any
	for codec := recordbatch.CompressionGzip; codec <= recordbatch.CompressionZstd; codec++ {
		for _, p := range payloads {
			c, err := Codecs{}.Compress(codec, nil, p)
			if err != nil {
				t.Fatalf("compress codec %d: %v", codec, err)
			}
			out = append(out, [2]any{uint8(codec), c})
		}
	}
	return out
}

// FuzzDecompress: every codec's decompression path takes any bytes without
// panicking, and what it returns stays within its limit.
func FuzzDecompress(f *testing.F) {
	for _, s := range codecSeeds(f) {
		f.Add(s[0].(uint8), s[1].([]byte))
	}
	for n := 0; n <= 20; n++ { // the xerial header cut at every length
		f.Add(uint8(recordbatch.CompressionSnappy), append(append([]byte{}, XerialMagic...), make([]byte, 12)...)[:n])
	}
	f.Add(uint8(recordbatch.CompressionLZ4), []byte{0x04, 0x22, 0x4d, 0x18})
	f.Add(uint8(recordbatch.CompressionZstd), []byte{0x28, 0xb5, 0x2f, 0xfd})
	f.Add(uint8(recordbatch.CompressionGzip), []byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		if out, err := (Codecs{}).Decompress(int(codec%8), src, 1<<20); err == nil && len(out) > 1<<20 {
			t.Fatalf("codec %d: %d bytes out, over the limit", codec%8, len(out))
		}
	})
}

// TestDecompressRoundTrip: what Compress writes, Decompress reads back, for
// every codec (the fuzz target's seeds are valid input).
func TestDecompressRoundTrip(t *testing.T) {
	want := bytes.Repeat([]byte("spool"), 20_000)
	for codec := recordbatch.CompressionGzip; codec <= recordbatch.CompressionZstd; codec++ {
		c, err := Codecs{}.Compress(codec, nil, want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Codecs{}.Decompress(codec, c, 64<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("codec %d: %d bytes back, err %v", codec, len(got), err)
		}
	}
}

// TestXerialShortHeader: snappy data that starts with the xerial magic but
// is cut before the end of the 16-byte header is an error, not a panic.
func TestXerialShortHeader(t *testing.T) {
	for n := len(XerialMagic); n < 16; n++ {
		src := append(append([]byte{}, XerialMagic...), bytes.Repeat([]byte{1}, n-len(XerialMagic))...)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("%d bytes: panic %v", n, r)
				}
			}()
			if _, err := (Codecs{}).Decompress(recordbatch.CompressionSnappy, src, 64<<20); err == nil {
				t.Fatalf("%d bytes: truncated xerial header decompressed", n)
			}
		}()
	}
}
