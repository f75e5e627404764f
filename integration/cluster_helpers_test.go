package integration

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// WithJoin makes the node join the cluster through these gossip addresses.
func WithJoin(addrs ...string) NodeOption {
	return func(n *Node) { n.Join = append(n.Join, addrs...) }
}

// member is one row of /v1/members.
type member struct {
	Name          string `json:"name"`
	ID            int    `json:"id"`
	Status        string `json:"status"`
	KafkaAddr     string `json:"kafka_addr"`
	GossipAddr    string `json:"gossip_addr"`
	PartitionsLed int    `json:"partitions_led"`
}

// startCluster starts size nodes with ids 1..size, each after the first
// joining the first, and waits until every node sees all of them alive.
func startCluster(t *testing.T, size int, opts ...NodeOption) []*Node {
	t.Helper()
	var nodes []*Node
	for id := 1; id <= size; id++ {
		o := append([]NodeOption{WithID(id)}, opts...)
		if id > 1 {
			o = append(o, WithJoin(nodes[0].GossipAddr))
		}
		nodes = append(nodes, StartNode(t, o...))
	}
	for _, n := range nodes {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, size, "alive", idsOf(nodes)...)
		})
	}
	return nodes
}

func idsOf(nodes []*Node) []int {
	var ids []int
	for _, n := range nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// wantStatus checks that exactly count members are listed and ids have status.
func wantStatus(ms map[int]member, count int, status string, ids ...int) error {
	if len(ms) != count {
		return fmt.Errorf("%d members listed, want %d: %v", len(ms), count, ms)
	}
	for _, id := range ids {
		if ms[id].Status != status {
			return fmt.Errorf("member %d is %q, want %q", id, ms[id].Status, status)
		}
	}
	return nil
}

// members runs `spool members --admin <n>` and parses its table, so the
// CLI an SRE uses is what the tests look through.
func members(t testing.TB, n *Node) (map[int]member, error) {
	t.Helper()
	out, err := Spool(t, "", "members", "--admin", n.AdminAddr, "--timeout", "3s")
	if err != nil {
		return nil, fmt.Errorf("spool members --admin %s: %v: %s", n.AdminAddr, err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAME") {
		return nil, fmt.Errorf("spool members printed %q", out)
	}
	ms := map[int]member{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 7 {
			return nil, fmt.Errorf("spool members row %q", l)
		}
		id, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("spool members row %q: %v", l, err)
		}
		led, _ := strconv.Atoi(f[6])
		ms[id] = member{Name: f[0], ID: id, Status: f[2], KafkaAddr: f[3], GossipAddr: f[4], PartitionsLed: led}
	}
	return ms, nil
}

// waitMembers polls n's members until check passes, and returns how long it
// took.
func waitMembers(t testing.TB, n *Node, timeout time.Duration, check func(map[int]member) error) time.Duration {
	t.Helper()
	start := time.Now()
	retry.Run(t, timeout, func() error {
		ms, err := members(t, n)
		if err != nil {
			return err
		}
		if err := check(ms); err != nil {
			return fmt.Errorf("node %d: %w", n.ID, err)
		}
		return nil
	})
	return time.Since(start)
}

// waitTopicEverywhere waits until every node's /v1/topics lists topic.
func waitTopicEverywhere(t testing.TB, nodes []*Node, topic string) {
	t.Helper()
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if !n.Running() {
				continue
			}
			var topics []struct {
				Name string `json:"name"`
			}
			if err := n.getJSON("/v1/topics", &topics); err != nil {
				return err
			}
			if !slices.ContainsFunc(topics, func(x struct {
				Name string `json:"name"`
			}) bool {
				return x.Name == topic
			}) {
				return fmt.Errorf("node %d does not list %s yet", n.ID, topic)
			}
		}
		return nil
	})
}

// partitionMeta is one partition of a Metadata answer.
type partitionMeta struct {
	Leader    int32
	ErrorCode int16
	Replicas  []int32
}

// metadata asks n (raw Metadata v9, no auto-create) about topic.
func metadata(t testing.TB, n *Node, topic string) (brokers []int32, parts []partitionMeta) {
	t.Helper()
	cl := franzClient(t, n.KafkaAddr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.SeedBrokers()[0].Request(ctxTimeout(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("metadata from node %d: %v", n.ID, err)
	}
	resp := raw.(*kmsg.MetadataResponse)
	if err != nil {
		t.Fatalf("metadata from node %d: %v", n.ID, err)
	}
	for _, b := range resp.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	slices.Sort(brokers)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata from node %d: %d topics", n.ID, len(resp.Topics))
	}
	parts = make([]partitionMeta, len(resp.Topics[0].Partitions))
	for _, p := range resp.Topics[0].Partitions {
		parts[p.Partition] = partitionMeta{Leader: p.Leader, ErrorCode: p.ErrorCode, Replicas: p.Replicas}
	}
	return brokers, parts
}

// startNodeNoWait is StartNode without waiting for /readyz, for a node that
// is not expected to become ready.
func startNodeNoWait(t *testing.T, opts ...NodeOption) *Node {
	t.Helper()
	n := newNode(t, opts...)
	n.StartNoWait()
	return n
}

// getStatus GETs path from n's admin API and returns the status and body.
func getStatus(t testing.TB, n *Node, path string) (int, string) {
	t.Helper()
	var code int
	var body string
	retry.Run(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + n.AdminAddr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return nil
	})
	return code, body
}
