package integration

// Clients' own test suites, unmodified, against real spool processes: the
// test binary of an upstream package (sarama's functional tests,
// kafka-go's package tests) is built from the module cache at the version
// go.mod requires, and run with -test.run naming the tests to pass. Those
// suites dial fixed addresses (sarama 127.0.0.1:29091-29095 through
// toxiproxy, kafka-go localhost:9092), so the nodes and the test binary
// share one network namespace of their own (netLab's first), where those
// ports are free whatever else runs on the machine; the nodes advertise
// the namespace's bridge address, which the test process reaches too.
//
// A suite that reports a test skipped, or does not report it passed,
// fails here: a suite that quietly skips (sarama does without
// KAFKA_VERSION) proves nothing.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// upstreamKafkaVersion is what the suites are told the broker is: the
// Kafka release whose API versions Spool serves.
const upstreamKafkaVersion = "4.1.0"

// upstreamSuite is one upstream package's test binary.
type upstreamSuite struct {
	pkg  string // import path, a module go.mod requires
	tags string // build tags ("" for none)
	bin  string
	dir  string // the package's source directory, the binary's working directory
}

var (
	upstreamMu    sync.Mutex
	upstreamBuilt = map[string]*upstreamSuite{}
)

// buildUpstream compiles pkg's tests (once per test binary) with go.mod's
// versions of it and its dependencies.
func buildUpstream(t *testing.T, pkg, tags string) *upstreamSuite {
	t.Helper()
	upstreamMu.Lock()
	defer upstreamMu.Unlock()
	if s := upstreamBuilt[pkg+"/"+tags]; s != nil {
		return s
	}
	// Beside the spool binary: TestMain removes the directory at the end.
	dir, err := os.MkdirTemp(filepath.Dir(spoolBin), "upstream-")
	if err != nil {
		t.Fatal(err)
	}
	s := &upstreamSuite{pkg: pkg, tags: tags, bin: filepath.Join(dir, filepath.Base(pkg)+".test")}
	args := []string{"test", "-c", "-o", s.bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	build := exec.Command("go", append(args, pkg)...)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(build.Args[1:], " "), err, out)
	}
	list := exec.Command("go", "list", "-f", "{{.Dir}}", pkg)
	list.Dir = ".."
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	s.dir = strings.TrimSpace(string(out))
	upstreamBuilt[pkg+"/"+tags] = s
	return s
}

// run runs the tests tests names in netns ns with env added, and fails t
// unless each of them reports PASS (none skipped, none failed).
func (s *upstreamSuite) run(t *testing.T, ns string, env []string, timeout time.Duration, tests ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pattern := "^(" + strings.Join(tests, "|") + ")$"
	args := []string{s.bin, "-test.run", pattern, "-test.v", "-test.count", "1", "-test.timeout", timeout.String()}
	if ns != "" { // "": the suite dials addresses it is given, no namespace needed
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	text := string(out)
	t.Logf("%s %s:\n%s", s.pkg, pattern, text)
	if err != nil {
		t.Errorf("%s: %v", s.pkg, err)
	}
	for _, name := range tests {
		if !regexp.MustCompile(`(?m)^\s*--- PASS: ` + regexp.QuoteMeta(name) + ` `).MatchString(text) {
			t.Errorf("%s: %s did not pass (skipped or failed: see the output above)", s.pkg, name)
		}
	}
	return text
}

// nsNode is a node in the lab's first namespace at fixed ports: its Kafka
// listener on every address of the namespace at kafkaPort (so 127.0.0.1
// there, where the suites dial), advertised on the namespace's address,
// the rest on that address.
func nsNode(l *netLab, id, kafkaPort int, join *Node, extra ...string) *Node {
	host := l.addr(1)
	o := []NodeOption{WithID(id), func(n *Node) {
		n.KafkaAddr = fmt.Sprintf("%s:%d", host, kafkaPort) // what the test process dials
		n.AdminAddr = fmt.Sprintf("%s:%d", host, 19640+id)
		n.GossipAddr = fmt.Sprintf("%s:%d", host, 17940+id)
	}}
	if join != nil {
		o = append(o, WithJoin(join.GossipAddr))
	}
	n := newNode(l.t, o...)
	// Args puts --kafka-addr first; a later one wins (pflag).
	n.ExtraArgs = append(n.ExtraArgs, "--kafka-addr", fmt.Sprintf("0.0.0.0:%d", kafkaPort),
		"--advertise-kafka-addr", n.KafkaAddr,
		"--raft-addr", fmt.Sprintf("%s:%d", host, 19940+id))
	n.ExtraArgs = append(n.ExtraArgs, extra...)
	l.startIn(l.ns(1), n)
	return n
}

// fakeToxiproxy answers the toxiproxy API as far as sarama's functional
// test setup uses it (GET /proxies/kafkaN, POST /reset) for proxies that
// are no more than their listen address: the nodes listen there
// themselves. A request for anything else (a toxic) is refused, so a
// test that needs a fault injected fails rather than runs without it.
func fakeToxiproxy(t *testing.T, host string, brokers int) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /proxies/{name}", func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.PathValue("name"), "kafka%d", &i); err != nil || i < 1 || i > brokers {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"name": r.PathValue("name"), "enabled": true,
			"listen": fmt.Sprintf("0.0.0.0:%d", 29090+i), "upstream": fmt.Sprintf("0.0.0.0:%d", 29090+i)})
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not served by the integration tests' toxiproxy stand-in: "+r.Method+" "+r.URL.Path, http.StatusNotImplemented)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestUpstreamSaramaQuotas runs sarama's TestFuncAdminQuotas, unmodified,
// against three nodes (its setup creates topics of three copies and
// waits until each is fully replicated with its preferred leader).
func TestUpstreamSaramaQuotas(t *testing.T) {
	s := buildUpstream(t, "github.com/IBM/sarama", "functional")
	l := newNetLab(t, 1)
	var nodes []*Node
	for id := 1; id <= 3; id++ {
		var join *Node
		if id > 1 {
			join = nodes[0]
		}
		nodes = append(nodes, nsNode(l, id, 29090+id, join))
	}
	for _, n := range nodes {
		waitMembers(t, n, 20*time.Second, func(ms map[int]member) error {
			return wantStatus(ms, 3, "alive", idsOf(nodes)...)
		})
	}
	toxi := fakeToxiproxy(t, l.subnet+".1", 5)
	s.run(t, l.ns(1), []string{"TOXIPROXY_ADDR=" + toxi, "KAFKA_VERSION=" + upstreamKafkaVersion}, 5*time.Minute,
		"TestFuncAdminQuotas")
}

// TestUpstreamKafkaGoQuotas runs kafka-go's TestClientAlterClientQuotas,
// unmodified, against a node on localhost:9092, then checks through
// another client that the quota it set is there.
func TestUpstreamKafkaGoQuotas(t *testing.T) {
	s := buildUpstream(t, "github.com/segmentio/kafka-go", "")
	l := newNetLab(t, 1)
	n := nsNode(l, 1, 9092, nil)
	s.run(t, l.ns(1), []string{"KAFKA_VERSION=" + upstreamKafkaVersion}, 3*time.Minute, "TestClientAlterClientQuotas")
	retry.Run(t, 10*time.Second, func() error {
		out, err := Spool(t, "", "quota", "list", "--client-id", "my-client-id", "--brokers", n.KafkaAddr)
		if err != nil || !strings.Contains(out, "producer_byte_rate=500000") {
			return fmt.Errorf("after kafka-go's test the node lists %q (%v), want its producer_byte_rate", out, err)
		}
		return nil
	})
}

// TestUpstreamFranzShareGroups runs franz-go's own share-group tests
// (pkg/kgo, unmodified) against three nodes through KGO_SEEDS: they
// skip unless ShareFetch v2 and ShareAcknowledge v2 are advertised, which
// run() counts as a failure. KGO_TEST_RECORDS shortens TestShareGroupETL's
// pipeline (500000 records by default) to what 2 cores run in a minute.
func TestUpstreamFranzShareGroups(t *testing.T) {
	s := buildUpstream(t, "github.com/twmb/franz-go/pkg/kgo", "")
	nodes := startCluster(t, 3)
	s.run(t, "", []string{"KGO_SEEDS=" + strings.Join(kafkaAddrs(nodes), ","), "KGO_TEST_RF=3", "KGO_TEST_RECORDS=3000"}, 4*time.Minute,
		"TestShareGroup", "TestShareGroupAckOnClose", "TestShareGroupOffsetsAdmin", "TestConsumeRegexShareSkipsInternal", "TestShareGroupETL")
}
