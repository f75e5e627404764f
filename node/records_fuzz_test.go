package node

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/recordbatch"
	"github.com/spool-log/spool/internal/recordbatch/compression"
)

// TestProduceShortXerialToCompactedTopic is the path to the panic:
// a compacted topic checks every batch's keys, so it decompresses a snappy
// batch on produce. A batch whose records are a cut xerial header gets an
// error code for its partition, and the connection keeps serving.
func TestProduceShortXerialToCompactedTopic(t *testing.T) {
	n := startNode(t, testConfig(t, t.TempDir()))
	adm := newAdmin(t, n)
	createTopic(t, adm, "table", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")})
	cl := newClient(t, n)

	magic := compression.XerialMagic
	for extra := 0; extra < 16-len(magic); extra++ {
		b := rawBatch(-1, -1, -1, 1000, "v")[:recordbatch.HeaderSize]
		b = append(b, magic...)
		b = append(b, make([]byte, extra)...)
		binary.BigEndian.PutUint32(b[recordbatch.OffLength:], uint32(len(b)-recordbatch.LengthOverhead))
		binary.BigEndian.PutUint16(b[recordbatch.OffAttributes:], uint16(recordbatch.CompressionSnappy))
		rawBatchFix(b)
		got := produceRaw(t, cl, "table", b)
		if got.ErrorCode != kerr.CorruptMessage.Code && got.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("%d-byte xerial payload: error code %d, want CORRUPT_MESSAGE or INVALID_RECORD", len(magic)+extra, got.ErrorCode)
		}
	}
	// The same connection still appends a good batch.
	createTopic(t, adm, "plain", 1, nil)
	if got := produceRaw(t, cl, "plain", rawBatch(-1, -1, -1, 1000, "k")); got.ErrorCode != 0 {
		t.Fatalf("good batch after the bad ones: error %d", got.ErrorCode)
	}
}
