package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// etlProc is one etlworker process.
type etlProc struct {
	id   string
	cmd  *exec.Cmd
	logs *lockedBuffer
}

func startETLWorker(t *testing.T, bin, brokers, id string) *etlProc {
	t.Helper()
	p := &etlProc{id: id, logs: &lockedBuffer{}}
	p.cmd = exec.Command(bin, brokers, id, "etl-group", "etl-in", "etl-out")
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start etlworker %s: %v", id, err)
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- etlworker %s ---\n%s", id, p.logs.String())
		}
	})
	return p
}

func (p *etlProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// groupCoordinatorID asks which broker coordinates group.
func groupCoordinatorID(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Coordinators) > 0 && resp.Coordinators[0].ErrorCode == 0 {
		return resp.Coordinators[0].NodeID, nil
	}
	return -1, fmt.Errorf("find coordinator of %s: %+v", group, resp)
}

// TestTxnETLKilled: consume-transform-produce with franz-go's
// GroupTransactSession in separate processes against three real nodes
// (topics of R=3). Mid-stream a worker is killed with SIGKILL (its
// transaction left open) and restarted under its transactional id, which
// fences and aborts the dead one's; a third worker joins (rebalances); the
// node coordinating the group (its __consumer_offsets partition, where the
// transactional offset commits go) is killed with SIGKILL. At the end
// every input record is in the output exactly once for a read_committed
// reader.
func TestTxnETLKilled(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "etlworker")
	build := exec.Command("go", "build", "-o", bin, "./integration/etlworker")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build etlworker: %v\n%s", err, out)
	}
	nodes := startCluster(t, 3)
	startReplicatedTopic(t, nodes, "etl-in", 3, 3)
	startReplicatedTopic(t, nodes, "etl-out", 3, 3)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.KafkaAddr)
	}
	brokers := strings.Join(seeds, ",")
	ctx := ctxTimeout(t, 4*time.Minute)
	const total = 3000
	prod := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("etl-in"), kgo.RequiredAcks(kgo.AllISRAcks()))
	var rs []*kgo.Record
	for i := range total {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("in-%05d", i)), Value: []byte("x")})
	}
	if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// A read_committed reader of the output, counting every key.
	var mu sync.Mutex
	seen := map[string]int{}
	readerCtx, stopReader := context.WithCancel(ctx)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("etl-out"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for readerCtx.Err() == nil {
			fs := cl.PollFetches(readerCtx)
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)]++ })
			mu.Unlock()
		}
	}()
	progress := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		dups := 0
		for _, c := range seen {
			if c > 1 {
				dups++
			}
		}
		return len(seen), dups
	}
	waitProgress := func(atLeast int, d time.Duration) {
		t.Helper()
		retry.Run(t, d, func() error {
			n, _ := progress()
			return retry.Check(n >= atLeast, "%d of %d records in the output", n, atLeast)
		})
	}

	w1 := startETLWorker(t, bin, brokers, "etl-1")
	startETLWorker(t, bin, brokers, "etl-2")
	waitProgress(300, 90*time.Second)
	t.Log("killing worker etl-1 and restarting it under its transactional id")
	w1.kill()
	startETLWorker(t, bin, brokers, "etl-1")
	startETLWorker(t, bin, brokers, "etl-3")
	n, _ := progress()
	waitProgress(n+300, 90*time.Second)

	cl := franzClient(t, seeds[0], kgo.SeedBrokers(seeds...))
	coordID, err := groupCoordinatorID(ctx, cl, "etl-group")
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		if int32(nd.ID) == coordID {
			t.Logf("killing node %d, the group's coordinator", nd.ID)
			nd.Kill()
		}
	}
	waitProgress(total, 150*time.Second)
	// Linger for duplicates arriving late.
	time.Sleep(3 * time.Second)
	stopReader()
	<-readerDone
	got, dups := progress()
	if got != total || dups > 0 {
		mu.Lock()
		var ex []string
		for k, c := range seen {
			if c > 1 && len(ex) < 10 {
				ex = append(ex, fmt.Sprintf("%s x%d", k, c))
			}
		}
		mu.Unlock()
		t.Fatalf("output holds %d of %d input records, %d of them more than once (e.g. %v)", got, total, dups, ex)
	}
	t.Logf("%d records copied exactly once through a worker kill, a restart, a join and the group coordinator's kill", total)
}
