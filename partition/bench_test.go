package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppend measures Append beside a baseline that writes the same
// bytes to a file with plain write(2), in the same benchmark, on the same
// filesystem (both under b.TempDir). Both roll to a new file every 64 MiB and
// keep two, so neither fills the disk, and both delete the oldest file in
// their timed region. The log runs Kafka's default policy (FlushOS), which
// still fsyncs a segment when it rolls, in the background as Kafka does; the
// baseline does the same: on roll it fsyncs the closed file from a goroutine.
// Without that the baseline's files would be deleted before writeback ever
// reached the disk, while the log's each cost 64 MiB of disk writes, and the
// ratio would compare page-cache copies with disk I/O. The batch is built
// once, before the timer starts. Reported: MB/s of each and ratio = append
// throughput / write(2) throughput (goal: >= 0.8).
//
//	go test -run='^$' -bench=BenchmarkAppend -benchtime=1000x -count=5 ./partition/
func BenchmarkAppend(b *testing.B) {
	for _, rec := range []int{100, 1024} {
		for _, batch := range []int{16 << 10, 64 << 10, 256 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("record=%dB/batch=%dKiB", rec, batch>>10), func(b *testing.B) {
				benchAppend(b, rec, batch)
			})
		}
	}
}

const benchSegment = 64 << 20

func benchAppend(b *testing.B, recSize, batchSize int) {
	// Records of ~recSize bytes, as many as fit the batch size.
	perRecord := len(sizedBatch(0, 2, recSize)) - len(sizedBatch(0, 1, recSize))
	n := max(1, (batchSize-BatchHeaderSize)/perRecord)
	req := sizedBatch(time.Now().UnixMilli(), n, recSize)
	dir := b.TempDir()

	cfg := DefaultConfig()
	cfg.SegmentBytes = benchSegment
	cfg.RetentionAge = -1
	cfg.RetentionBytes = 2 * benchSegment
	l, err := Open(filepath.Join(dir, "log"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	base := newRollingFile(b, filepath.Join(dir, "base"))
	defer base.close()

	b.SetBytes(int64(len(req)))
	b.ResetTimer()
	var tLog, tBase time.Duration
	for i := 0; i < b.N; i++ {
		// Alternate which goes first so page-cache state treats both alike.
		for k := 0; k < 2; k++ {
			if (i+k)%2 == 0 {
				start := time.Now()
				if _, err := l.Append(req, -1); err != nil {
					b.Fatal(err)
				}
				if l.SegmentCount() > 2 {
					if _, err := l.EnforceRetention(); err != nil {
						b.Fatal(err)
					}
				}
				tLog += time.Since(start)
			} else {
				start := time.Now()
				base.write(req)
				tBase += time.Since(start)
			}
		}
	}
	b.StopTimer()
	mb := float64(b.N) * float64(len(req)) / 1e6
	b.ReportMetric(mb/tLog.Seconds(), "append-MB/s")
	b.ReportMetric(mb/tBase.Seconds(), "write2-MB/s")
	b.ReportMetric(tBase.Seconds()/tLog.Seconds(), "ratio")
}

// rollingFile is the baseline: write(2) to a file, a new one every
// benchSegment bytes, the closed one fsynced in the background (as Log.roll
// does), the one before last deleted.
type rollingFile struct {
	b       testing.TB
	prefix  string
	f       *os.File
	n       int
	written int64
	syncs   sync.WaitGroup
}

func newRollingFile(b testing.TB, prefix string) *rollingFile {
	r := &rollingFile{b: b, prefix: prefix}
	r.roll()
	return r
}

func (r *rollingFile) roll() {
	if old := r.f; old != nil {
		r.syncs.Add(1)
		go func() {
			defer r.syncs.Done()
			if err := old.Sync(); err != nil {
				r.b.Error(err)
			}
			old.Close()
		}()
	}
	if r.n >= 2 {
		os.Remove(fmt.Sprintf("%s.%d", r.prefix, r.n-2))
	}
	f, err := os.OpenFile(fmt.Sprintf("%s.%d", r.prefix, r.n), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		r.b.Fatal(err)
	}
	r.f, r.n, r.written = f, r.n+1, 0
}

func (r *rollingFile) write(p []byte) {
	if r.written > 0 && r.written+int64(len(p)) > benchSegment {
		r.roll()
	}
	if _, err := r.f.Write(p); err != nil {
		r.b.Fatal(err)
	}
	r.written += int64(len(p))
}

func (r *rollingFile) close() {
	r.syncs.Wait()
	r.f.Close()
}

// BenchmarkValidateBatches is Append's CPU cost alone: CRC-32C plus the
// record walk of an uncompressed 1 MiB batch.
func BenchmarkValidateBatches(b *testing.B) {
	for _, rec := range []int{100, 1024} {
		req := sizedBatch(1, (1<<20)/(rec+10), rec)
		b.Run(fmt.Sprintf("record=%dB", rec), func(b *testing.B) {
			b.SetBytes(int64(len(req)))
			for i := 0; i < b.N; i++ {
				if err := ValidateBatches(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
