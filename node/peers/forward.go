package peers

import (
	"context"
	"encoding/json"
	"fmt"
)

// AdminAddrs gives a live broker's admin listener address, false when
// none is known (the broker is not alive, or did not gossip one).
type AdminAddrs func(broker int32) (string, bool)

// PostToBroker forwards a request to the broker that leads what it is
// about (a partition a transaction marker goes to, the coordinator of a
// transactional id, the leader of a share partition or of its state): req
// as JSON to path on broker's admin listener, the 200 answer's JSON (at
// most limit bytes) decoded into out. Its errors name the broker; ctx
// bounds the whole call.
func (c *Client) PostToBroker(ctx context.Context, addrs AdminAddrs, broker int32, path string, req any, limit int64, out any) error {
	addr, ok := addrs(broker)
	if !ok || addr == "" {
		return fmt.Errorf("broker %d: no admin address known", broker)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("broker %d: %w", broker, err)
	}
	if err := c.PostJSON(ctx, addr, path, body, limit, out); err != nil {
		return fmt.Errorf("broker %d: %w", broker, err)
	}
	return nil
}
