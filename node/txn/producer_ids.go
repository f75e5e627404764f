package txn

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spool-log/spool/internal/atomicfile"
)

// A partition's producer state (idempotence and transactions) is package
// hosted's (hosted.Producers); the producer ids are the node's, handed out
// here for InitProducerID (Config.AllocateID).

// ProducerIDBlock is how many producer ids are reserved on disk at a time:
// the file is rewritten once per block, and a crash skips at most one
// block's unused ids, never reuses one.
const ProducerIDBlock = 1000

// ProducerIDs hands out producer ids: the node id in the high 32 bits and a
// counter persisted in a file (the node's DataDir/producer-ids) in the low
// 32, so ids never repeat across restarts or across nodes.
//
// Lock: mu, held across the file's rewrite once per ProducerIDBlock ids:
// only InitProducerID requests wait on it, and the next id cannot be handed
// out before its block is reserved.
type ProducerIDs struct {
	mu     sync.Mutex
	path   string
	nodeID int32
	next   int64 // next counter value to hand out
	limit  int64 // counter values below limit are reserved on disk
}

// OpenProducerIDs reads the reservation saved at path (none: a new node).
func OpenProducerIDs(path string, nodeID int32) (*ProducerIDs, error) {
	p := &ProducerIDs{path: path, nodeID: nodeID}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("parse %s: %q is not a counter", path, b)
		}
		p.next, p.limit = n, n
	}
	return p, nil
}

// Allocate hands out a producer id never handed out before by this node.
func (p *ProducerIDs) Allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.limit {
		limit := p.next + ProducerIDBlock
		if limit > math.MaxUint32 {
			return 0, fmt.Errorf("producer id counter of node %d exhausted", p.nodeID)
		}
		if err := atomicfile.Write(p.path, []byte(strconv.FormatInt(limit, 10)+"\n"), 0o600); err != nil {
			return 0, fmt.Errorf("reserve producer ids: %w", err)
		}
		p.limit = limit
	}
	id := int64(p.nodeID)<<32 | p.next
	p.next++
	return id, nil
}
