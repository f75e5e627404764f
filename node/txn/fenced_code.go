package txn

import "github.com/twmb/franz-go/pkg/kerr"

// FencedCode is code as a request version knows it: PRODUCER_FENCED
// becomes INVALID_PRODUCER_EPOCH for a version before KIP-588's.
func FencedCode(code int16, knowsFenced bool) int16 {
	if code == kerr.ProducerFenced.Code && !knowsFenced {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
