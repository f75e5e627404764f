package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node"
	nodeadmin "github.com/spool-log/spool/node/admin"
)

func TestClusterCommands(t *testing.T) {
	first := testNode(t, func(c *node.Config) { c.NodeID = 1; c.Rack = "r1" })
	second := testNode(t, func(c *node.Config) {
		c.NodeID = 2
		c.Gossip.Join = []string{first.Membership().Local().GossipAddr}
	})
	admin := []string{"--admin", first.AdminAddr()}
	// Alive and in node 1's roster, which placement hashes over: gossip
	// shows a member alive a moment before the roster has saved it.
	retry.Run(t, 20*time.Second, func() error {
		return retry.Check(len(first.Membership().LiveBrokers()) == 2 && len(first.Membership().Roster()) == 2, "node 2 has not joined node 1")
	})

	cl, err := kgo.NewClient(kgo.SeedBrokers(first.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, 1, nil, "laid-out"); err != nil {
		t.Fatal(err)
	}

	// As a script would: until members shows both alive (a node is
	// joining until it serves what every node sees).
	var out string
	retry.Run(t, 20*time.Second, func() error {
		var err error
		out, _, err = runCLI(t, "", append([]string{"members"}, admin...)...)
		if err != nil {
			return err
		}
		return retry.Check(strings.Count(out, " alive ") == 2, "spool members:\n%s", out)
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME ID STATUS KAFKA GOSSIP RACK LED" {
		t.Fatalf("spool members printed:\n%s", out)
	}
	led := 0
	for i, n := range []*node.Node{first, second} {
		f := strings.Fields(lines[i+1])
		if len(f) != 7 || f[0] != n.Membership().Local().Name || f[2] != "alive" || f[3] != n.KafkaAddr() || f[4] != n.Membership().Local().GossipAddr {
			t.Errorf("row %q does not describe node %d", lines[i+1], n.NodeID())
		}
		if i == 0 && f[5] != "r1" || i == 1 && f[5] != "-" {
			t.Errorf("row %q: wrong rack", lines[i+1])
		}
		l, err := strconv.Atoi(f[6])
		if err != nil {
			t.Errorf("row %q: LED %q", lines[i+1], f[6])
		}
		led += l
	}
	if led != 6 {
		t.Errorf("members lead %d partitions in all, want 6", led)
	}

	out, _, err = runCLI(t, "", append([]string{"members", "-o", "json"}, admin...)...)
	var members []nodeadmin.MemberInfo
	if err != nil || json.Unmarshal([]byte(out), &members) != nil || len(members) != 2 || members[1].ID != 2 {
		t.Fatalf("spool members -o json: %v\n%s", err, out)
	}

	out, _, err = runCLI(t, "", append([]string{"placement", "laid-out"}, admin...)...)
	if err != nil {
		t.Fatalf("spool placement: %v", err)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "TOPIC") || strings.Contains(out, "*") {
		t.Errorf("spool placement printed:\n%s", out)
	}
	if _, _, err := runCLI(t, "", append([]string{"placement", "no-such-topic"}, admin...)...); err == nil || !strings.Contains(err.Error(), "unknown topic") {
		t.Errorf("placement of an unknown topic: %v", err)
	}

	// Single-copy partitions cannot move off broker 2: refused, saying so.
	if _, _, err := runCLI(t, "", append([]string{"decommission", "2"}, admin...)...); err == nil || !strings.Contains(err.Error(), "replication factor 1") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("decommission of a broker holding single-copy partitions: %v", err)
	}

	// --watch streams the leave of node 2 as a line.
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetArgs(append([]string{"members", "--watch"}, admin...))
		root.SetOut(outW)
		root.SetErr(errW)
		err := root.ExecuteContext(wctx)
		outW.Close()
		errW.Close()
		done <- err
	}()
	status, err := bufio.NewReader(errR).ReadString('\n')
	if err != nil || !strings.Contains(status, "watching membership events") {
		t.Fatalf("spool members --watch did not start: %q %v", status, err)
	}
	go io.Copy(io.Discard, errR)
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := second.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outR)
	var saw string
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "leave") && strings.Contains(line, "id=2") {
			saw = line
			break
		}
	}
	wcancel()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Errorf("spool members --watch: %v", err)
	}
	if !strings.Contains(saw, "status=left") {
		t.Fatalf("no leave line for node 2 in the watch (last: %q)", saw)
	}

	out, _, err = runCLI(t, "", append([]string{"decommission", "2", "--force"}, admin...)...)
	if err != nil || !strings.Contains(out, "broker 2 draining; placement now uses [1]") {
		t.Errorf("decommission of a stopped broker: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "", append([]string{"placement"}, admin...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		onTwo := f[2] == "[2]"
		if marked := len(f) == 9 && f[8] == "*"; marked != onTwo || onTwo && f[3] != "none" {
			t.Errorf("after decommissioning 2: %q", line)
		}
	}
}

func TestClusterCommandsWithoutANode(t *testing.T) {
	// Refused at once: long before a --timeout of a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err := runCLIContext(ctx, "", "members", "--admin", freeAddr(t), "--timeout", "60s")
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "--admin") {
		t.Errorf("members with no node: %v", err)
	}
}
