package share

import (
	"net/http"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/httpjson"
)

// ServeDescribe answers GET /v1/share-groups/{group} on the admin API: the
// group's share partitions this node leads, with their start offset, the
// end of the in-flight window and the in-flight count, which no Kafka API
// carries (`spool group describe` asks each partition's leader). A
// partition this node keeps state for but no longer leads is left out:
// its new leader's word is the one that counts.
func (n *Node) ServeDescribe(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	_, parts := n.Get()
	out := []adminapi.SharePartition{}
	for _, ps := range parts.Describe(group) {
		topic, ok := n.b.TopicName(ps.TopicID)
		if !ok {
			continue
		}
		if _, e := n.b.Led(topic, ps.Partition); e != nil {
			continue
		}
		out = append(out, adminapi.SharePartition{
			Topic: topic, Partition: ps.Partition, StartOffset: ps.StartOffset, EndOffset: ps.EndOffset,
			InFlight: ps.InFlight, Acquired: ps.Acquired,
		})
	}
	httpjson.Write(w, out)
}
