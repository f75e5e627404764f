package node

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// TestListenersAcrossNodes: each node's listeners reach the others by
// gossip, and Metadata, DescribeCluster and FindCoordinator answer with the
// addresses of the listener asked on: EXTERNAL clients get the advertised
// EXTERNAL addresses, and the node without an EXTERNAL listener is left
// out of their broker list; INTERNAL clients get every node's bound
// INTERNAL address.
func TestListenersAcrossNodes(t *testing.T) {
	var nodes []*Node
	for id := 1; id <= 3; id++ {
		cfg := testConfig(t, t.TempDir())
		cfg.NodeID = int32(id)
		cfg.KafkaListenerName = "INTERNAL"
		if id < 3 {
			cfg.Listeners = []Listener{{Name: "EXTERNAL", Addr: "127.0.0.1:0", AdvertisedAddr: fmt.Sprintf("ext-%d.example.com:9093", id)}}
		}
		if id > 1 {
			cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
		}
		nodes = append(nodes, startNode(t, cfg))
	}
	waitMembers(t, nodes, 3)

	want := map[string][]string{
		"EXTERNAL": {"1@ext-1.example.com:9093", "2@ext-2.example.com:9093"},
	}
	for _, n := range nodes {
		want["INTERNAL"] = append(want["INTERNAL"], fmt.Sprintf("%d@%s", n.NodeID(), n.KafkaAddr()))
	}
	for listener, brokers := range want {
		addr := nodes[0].ListenerAddrs()[listener]
		retry.Run(t, 20*time.Second, func() error {
			vc := dialVersions(t, addr)
			meta := kmsg.NewPtrMetadataRequest()
			meta.Version = 12
			mr := roundTrip[*kmsg.MetadataResponse](t, vc, meta)
			var got []string
			for _, b := range mr.Brokers {
				got = append(got, fmt.Sprintf("%d@%s", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))))
			}
			slices.Sort(got)
			if !slices.Equal(got, brokers) {
				return fmt.Errorf("%s Metadata brokers %v, want %v", listener, got, brokers)
			}
			dc := kmsg.NewPtrDescribeClusterRequest()
			dc.Version = 1
			dr := roundTrip[*kmsg.DescribeClusterResponse](t, vc, dc)
			got = got[:0]
			for _, b := range dr.Brokers {
				got = append(got, fmt.Sprintf("%d@%s", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))))
			}
			slices.Sort(got)
			if !slices.Equal(got, brokers) {
				return fmt.Errorf("%s DescribeCluster brokers %v, want %v", listener, got, brokers)
			}
			return nil
		})
	}

	// A group coordinated by node 1 or 2 is found at its EXTERNAL address.
	vc := dialVersions(t, nodes[0].ListenerAddrs()["EXTERNAL"])
	for i := 0; i < 20; i++ {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.Version, fc.CoordinatorKey = 3, fmt.Sprintf("group-%d", i)
		fr := roundTrip[*kmsg.FindCoordinatorResponse](t, vc, fc)
		if fr.ErrorCode != 0 {
			continue // coordinated by node 3, which has no EXTERNAL listener, or not ready yet
		}
		if wantHost := fmt.Sprintf("ext-%d.example.com", fr.NodeID); fr.Host != wantHost || fr.Port != 9093 {
			t.Fatalf("FindCoordinator on EXTERNAL: node %d at %s:%d, want %s:9093", fr.NodeID, fr.Host, fr.Port, wantHost)
		}
	}
}
