package integration

// The CLI when part of the cluster is down: what an SRE reaches for in an
// outage must finish within --timeout, do what can be done, and say what
// could not.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// cliRun is one finished run of the spool CLI.
type cliRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// spoolRun runs the CLI with stdin, keeping stdout and stderr apart, and
// measures how long it took to exit.
func spoolRun(t testing.TB, stdin string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, spoolBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cliRun{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("spool %v: %v", args, err)
	}
	return r
}

// within fails the test unless r exited within timeout plus a margin for
// process start, the first connection and closing (a bound, not a benchmark).
func (r cliRun) within(t testing.TB, what string, timeout time.Duration) {
	t.Helper()
	const margin = 5 * time.Second
	if r.took > timeout+margin {
		t.Errorf("%s took %v, more than --timeout %v plus %v", what, r.took.Round(time.Millisecond), timeout, margin)
	}
	t.Logf("MEASURED: %s exited %d after %v (--timeout %v); stderr: %s", what, r.code, r.took.Round(time.Millisecond), timeout, strings.TrimSpace(r.stderr))
}

// groupOn finds a group name whose coordinator is broker id.
func groupOn(t testing.TB, adm *kadm.Client, id int32, prefix string) string {
	t.Helper()
	for i := 0; i < 500; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		var coord int32 = -1
		retry.Run(t, 20*time.Second, func() error {
			r := adm.FindGroupCoordinators(ctxTimeout(t, 10*time.Second), g)[g]
			coord = r.NodeID
			return r.Err
		})
		if coord == id {
			return g
		}
	}
	t.Fatalf("no group found with its coordinator on broker %d", id)
	return ""
}

func TestCLIWithANodeDown(t *testing.T) {
	// One copy of each offsets partition: a group's coordinator then dies
	// with its node (a replicated one would fail over, which is not what
	// this test is about).
	nodes := startCluster(t, 3, withQuickGroups, WithArgs("--offsets-topic-partitions", "6", "--offsets-topic-replication-factor", "1"))
	a, c := nodes[0], nodes[2]
	const timeout = 3 * time.Second
	cli := func(stdin string, args ...string) cliRun {
		t.Helper()
		return spoolRun(t, stdin, append(args, "--brokers", a.KafkaAddr, "--timeout", timeout.String())...)
	}
	topic := uniqueTopic("outage")
	const partitions = 6
	if r := cli("", "topic", "create", topic, "--partitions", fmt.Sprint(partitions)); r.code != 0 {
		t.Fatalf("topic create: %d %s%s", r.code, r.stdout, r.stderr)
	}
	waitTopicEverywhere(t, nodes, topic)

	// Keyed input to every partition, while all nodes are up.
	var input strings.Builder
	byPart := map[int32][]string{}
	hash := kgo.StickyKeyPartitioner(nil).ForTopic(topic)
	for i := 0; i < 60; i++ {
		k, v := fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i)
		p := int32(hash.Partition(&kgo.Record{Key: []byte(k)}, partitions))
		byPart[p] = append(byPart[p], v)
		fmt.Fprintf(&input, "%s=%s\n", k, v)
	}
	if r := cli(input.String(), "produce", topic, "--key-separator", "="); r.code != 0 || !strings.Contains(r.stderr, "produced 60 records to "+topic) {
		t.Fatalf("produce with all nodes up: %d %q", r.code, r.stderr)
	}

	// Groups coordinated by node 1 and by node 3, each with a commit made by
	// consume --group.
	adm := kadm.NewClient(franzClient(t, a.KafkaAddr))
	waitTopicEverywhere(t, nodes, topic)
	groupA, groupC := groupOn(t, adm, 1, "on1"), groupOn(t, adm, 3, "on3")
	for _, g := range []string{groupA, groupC} {
		if r := cli("", "consume", topic, "--group", g, "-n", "5"); r.code != 0 || strings.Count(r.stdout, "\n") != 5 {
			t.Fatalf("consume --group %s: %d %q %q", g, r.code, r.stdout, r.stderr)
		}
	}
	if r := cli("", "group", "list"); r.code != 0 || !strings.Contains(r.stdout, groupA) || !strings.Contains(r.stdout, groupC) {
		t.Fatalf("group list with all nodes up: %d %q %q", r.code, r.stdout, r.stderr)
	}

	_, parts := metadata(t, a, topic)
	var onC, elsewhere []int32
	for p, pm := range parts {
		if pm.Leader == int32(c.ID) {
			onC = append(onC, int32(p))
		} else {
			elsewhere = append(elsewhere, int32(p))
		}
	}
	if len(onC) == 0 || len(elsewhere) == 0 {
		t.Fatalf("want partitions on node 3 and elsewhere: %+v", parts)
	}
	// A watch through node 3 lists the members first, and goes on through
	// another node once node 3 dies.
	watch := exec.Command(spoolBin, "members", "--watch", "--admin", c.AdminAddr)
	watchOut, watchErr := &lockedBuffer{}, &lockedBuffer{}
	watch.Stdout, watch.Stderr = watchOut, watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan struct{})
	go func() { watch.Wait(); close(watchDone) }()
	defer func() {
		watch.Process.Kill()
		<-watchDone
	}()
	retry.Run(t, 20*time.Second, func() error {
		if out := watchOut.String(); !strings.HasPrefix(out, "NAME") || strings.Count(out, " alive ") != 3 {
			return fmt.Errorf("members --watch has not listed the 3 members first: %q", out)
		}
		return nil
	})

	c.Kill()
	waitMembers(t, a, 20*time.Second, func(ms map[int]member) error { return wantStatus(ms, 3, "failed", 3) })

	t.Run("produce keyed", func(t *testing.T) {
		r := cli(input.String(), "produce", topic, "--key-separator", "=")
		r.within(t, "produce with a leader down", timeout)
		if r.code == 0 {
			t.Fatalf("produce with partitions %v down exited 0: %q", onC, r.stderr)
		}
		written, notWritten, ok := strings.Cut(r.stderr, "not written:")
		if !ok {
			t.Fatalf("produce does not say what was not written: %q", r.stderr)
		}
		total := 0
		for _, p := range elsewhere {
			total += len(byPart[p])
			if want := fmt.Sprintf("partition %d: %d", p, len(byPart[p])); len(byPart[p]) > 0 && !strings.Contains(written, want) {
				t.Errorf("report lacks %q among the written: %q", want, r.stderr)
			}
		}
		if want := fmt.Sprintf("%d of 60 records written", total); !strings.Contains(written, want) {
			t.Errorf("report lacks %q: %q", want, r.stderr)
		}
		for _, p := range onC {
			if want := fmt.Sprintf("partition %d: %d", p, len(byPart[p])); len(byPart[p]) > 0 && !strings.Contains(notWritten, want) {
				t.Errorf("report lacks %q among the not written: %q", want, r.stderr)
			}
		}
	})

	t.Run("produce unkeyed", func(t *testing.T) {
		// Unkeyed records go round-robin over the partitions with a leader.
		var lines strings.Builder
		for i := 0; i < 3*len(elsewhere); i++ {
			fmt.Fprintf(&lines, "unkeyed-%d\n", i)
		}
		r := cli(lines.String(), "produce", topic)
		r.within(t, "unkeyed produce with a leader down", timeout)
		if r.code != 0 {
			t.Fatalf("unkeyed produce with live partitions left failed: %d %q", r.code, r.stderr)
		}
		for _, p := range elsewhere {
			if want := fmt.Sprintf("partition %d: 3", p); !strings.Contains(r.stderr, want) {
				t.Errorf("unkeyed records not spread evenly (%q missing): %q", want, r.stderr)
			}
		}
	})

	t.Run("consume one live partition", func(t *testing.T) {
		p := elsewhere[0]
		r := cli("", "consume", topic, "--partition", fmt.Sprint(p), "-n", fmt.Sprint(len(byPart[p])))
		r.within(t, "consume of a live partition", timeout)
		got := strings.Fields(r.stdout)
		if r.code != 0 || !slices.Equal(got, byPart[p]) {
			t.Fatalf("consume --partition %d with node 3 down: %d, got %v want %v; %q", p, r.code, got, byPart[p], r.stderr)
		}
	})

	t.Run("consume the dead partition", func(t *testing.T) {
		p := onC[0]
		r := cli("", "consume", topic, "--partition", fmt.Sprint(p))
		r.within(t, "consume of a partition whose leader is down", timeout)
		want := fmt.Sprintf("partition %d of %s is unavailable (no leader", p, topic)
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Fatalf("consume --partition %d: %d %q, want %q", p, r.code, r.stderr, want)
		}
	})

	t.Run("consume the whole topic", func(t *testing.T) {
		r := cli("", "consume", topic)
		r.within(t, "consume of the whole topic", timeout)
		var want []string
		for _, p := range elsewhere {
			// Twice: once before node 3 died, once by "produce keyed".
			want = append(want, byPart[p]...)
			want = append(want, byPart[p]...)
		}
		got := slices.DeleteFunc(strings.Fields(r.stdout), func(s string) bool { return strings.HasPrefix(s, "unkeyed-") })
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("whole-topic consume printed %v, want the live partitions' %v", got, want)
		}
		if r.code == 0 || !strings.Contains(r.stderr, partitionsWord(onC)+" of "+topic) || !strings.Contains(r.stderr, "unavailable") {
			t.Errorf("whole-topic consume: exit %d, stderr %q; want non-zero and %s named", r.code, r.stderr, partitionsWord(onC))
		}
	})

	t.Run("members watch", func(t *testing.T) {
		retry.Run(t, 20*time.Second, func() error {
			if !strings.Contains(watchErr.String(), "the node at "+c.AdminAddr+" stopped answering") || !strings.Contains(watchErr.String(), "watching through") {
				return fmt.Errorf("members --watch did not move on from node 3: stderr %q", watchErr.String())
			}
			if !regexp.MustCompile(`(fail|update)\s+spool-3\s+id=3\s+status=failed.*`).MatchString(watchOut.String()) {
				return fmt.Errorf("members --watch does not show node 3 failed: %q", watchOut.String())
			}
			return nil
		})
		select {
		case <-watchDone:
			t.Fatalf("members --watch exited: %q %q", watchOut.String(), watchErr.String())
		default:
		}
		t.Logf("members --watch:\n%s%s", watchErr.String(), watchOut.String())
	})

	t.Run("group describe", func(t *testing.T) {
		r := cli("", "group", "describe", groupA)
		r.within(t, "group describe of a group on a live node", timeout)
		if r.code != 0 || !strings.Contains(r.stdout, "group "+groupA) {
			t.Errorf("group describe %s (coordinator alive): %d %q %q", groupA, r.code, r.stdout, r.stderr)
		}
		r = cli("", "group", "describe", groupC)
		r.within(t, "group describe of a group whose coordinator is down", timeout)
		if r.code == 0 || !strings.Contains(r.stderr, "coordinator") {
			t.Errorf("group describe %s (coordinator down): %d %q", groupC, r.code, r.stderr)
		}
	})

	t.Run("group list", func(t *testing.T) {
		r := cli("", "group", "list")
		r.within(t, "group list with a node down", timeout)
		if !strings.Contains(r.stdout, groupA) {
			t.Errorf("group list does not show %s, coordinated by a live node: %q", groupA, r.stdout)
		}
		if r.code == 0 || !strings.Contains(r.stderr, "broker 3") {
			t.Errorf("group list: exit %d, stderr %q; want non-zero and broker 3 named", r.code, r.stderr)
		}
	})
}

// partitionsWord is how the CLI names a set of partitions.
func partitionsWord(ps []int32) string {
	ps = slices.Clone(ps)
	slices.Sort(ps)
	if len(ps) == 1 {
		return fmt.Sprintf("partition %d", ps[0])
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return "partitions " + strings.Join(s, ", ")
}
