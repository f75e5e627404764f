package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node"
)

// TestAdminErrorsAreOneLine: a refusal of the admin API reads as the node's
// message on one line, not as a raw HTTP exchange.
func TestAdminErrorsAreOneLine(t *testing.T) {
	g, _ := testCluster(t)
	_, err := g.Placement(testContext(t), "no-such-topic")
	if err == nil {
		t.Fatal("placement of an unknown topic succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "http://") || !strings.HasPrefix(msg, `unknown topic "no-such-topic" (404 Not Found from the admin API at `) {
		t.Errorf("admin error: %q", msg)
	}

	// Something else on the port (an HTML error page) is named as such.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<html>\n<body>Not here</body>\n</html>\n"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	g.AdminAddr = ln.Addr().String()
	if _, err := g.Members(testContext(t)); err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "not Spool's (is --admin the node's --admin-addr?)") {
		t.Errorf("members from a web server that is not Spool: %v", err)
	}
}

// TestWatchMembersMovesOn: when the watched node goes away, the watch goes
// on through another live member, and reports its leave.
func TestWatchMembersMovesOn(t *testing.T) {
	g, first := testCluster(t, func(c *node.Config) { c.NodeID = 1 })
	second := nodetestStartJoined(t, first)
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range []*node.Node{first, second} {
			live := n.Membership().LiveBrokers()
			if len(live) != 2 {
				return fmt.Errorf("node %d sees %d alive", n.NodeID(), len(live))
			}
			for _, m := range live {
				if !membership.MemberServes(m, 2) {
					return fmt.Errorf("node %d sees broker %d joining", n.NodeID(), m.BrokerID)
				}
			}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	listed := make(chan int, 1)
	moved := make(chan string, 1)
	left := make(chan adminapi.MemberEvent, 16)
	done := make(chan error, 1)
	go func() {
		done <- g.WatchMembers(ctx, MemberWatch{
			Members: func(addr string, ms []adminapi.MemberInfo) { listed <- len(ms) },
			Event: func(ev adminapi.MemberEvent, old adminapi.MemberInfo, had bool) {
				if ev.Member.ID == 1 && ev.Member.Status != "alive" {
					left <- ev
				}
			},
			Moved: func(from, to string, err error) { moved <- from + " -> " + to },
		})
	}()
	if n := <-listed; n != 2 {
		t.Fatalf("the watch listed %d members, want 2", n)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer scancel()
	if err := first.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-moved:
		if m != first.AdminAddr()+" -> "+second.AdminAddr() {
			t.Errorf("moved %s, want from node 1 to node 2", m)
		}
	case err := <-done:
		t.Fatalf("the watch ended when its node went away: %v", err)
	case <-ctx.Done():
		t.Fatal("the watch did not move on")
	}
	select {
	case ev := <-left:
		if ev.Member.Status != "left" {
			t.Errorf("node 1 after its shutdown: %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not report node 1 leaving")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("an interrupted watch: %v", err)
	}
}
