package client

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spool-log/spool/membership"
)

// Decommission starts draining broker id (its partitions move off it, then
// it leaves the roster; force leaves its replication-factor-1 partitions
// behind) and returns the brokers placement now uses.
func (g Config) Decommission(ctx context.Context, id int32, force bool) (roster []int32, err error) {
	path := "/v1/roster/decommission?id=" + strconv.Itoa(int(id))
	if force {
		path += "&force=1"
	}
	return g.decommission(ctx, path)
}

// CancelDecommission stops draining broker id.
func (g Config) CancelDecommission(ctx context.Context, id int32) (roster []int32, err error) {
	return g.decommission(ctx, "/v1/roster/decommission?cancel=1&id="+strconv.Itoa(int(id)))
}

func (g Config) decommission(ctx context.Context, path string) ([]int32, error) {
	var entries []membership.RosterEntry
	if err := g.adminJSON(ctx, "POST", path, &entries); err != nil {
		return nil, err
	}
	roster := []int32{}
	for _, e := range entries {
		if !e.Decommissioned && !e.Draining() {
			roster = append(roster, e.ID)
		}
	}
	return roster, nil
}

// DrainStatus is how far a broker's drain stands.
type DrainStatus membership.DrainStatus

// DrainProgress is broker id's drain as the AdminAddr node sees it.
func (g Config) DrainProgress(ctx context.Context, id int32) (DrainStatus, error) {
	var st DrainStatus
	return st, g.adminJSON(ctx, "GET", "/v1/roster/drain?id="+strconv.Itoa(int(id)), &st)
}

// WaitDrained polls broker id's drain until it is out of the roster, or
// only blocked partitions keep it (returned with an error saying so),
// calling each on every change of the partitions left and moving.
func (g Config) WaitDrained(ctx context.Context, id int32, each func(DrainStatus)) (DrainStatus, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last DrainStatus
	var lastErr error
	seen := false
	for {
		st, err := g.DrainProgress(ctx, id)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				lastErr = err
			}
		case st.State == "decommissioned":
			return st, nil
		case st.State != "draining":
			return st, fmt.Errorf("broker %d is %s: not draining (cancelled?)", id, st.State)
		default:
			if !seen || len(st.Partitions) != len(last.Partitions) || st.Moving != last.Moving || st.Paused != last.Paused || st.MovesElsewhere != last.MovesElsewhere {
				each(st)
			}
			seen, last = true, st
			if !st.Done && st.Blocked > 0 && st.Blocked == len(st.Partitions) {
				return st, fmt.Errorf("broker %d: %d partitions cannot move (see above); the drain waits", id, st.Blocked)
			}
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("wait for the drain of broker %d: %v; %d partitions left, %d moving; the drain goes on: `spool decommission %d --wait 10m` shows it", id, ctx.Err(), len(last.Partitions), last.Moving, id)
			if lastErr != nil {
				msg += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			return last, fmt.Errorf("%s", msg)
		case <-t.C:
		}
	}
}

// Progress is the drain in one line.
func (st DrainStatus) Progress() string {
	s := fmt.Sprintf("broker %d %s: %d partitions left, %d moving", st.Broker, st.State, len(st.Partitions), st.Moving)
	if st.Blocked > 0 {
		s += fmt.Sprintf(", %d blocked", st.Blocked)
	}
	if st.MovesElsewhere > 0 {
		s += fmt.Sprintf(", waiting for %d moves of other partitions to end", st.MovesElsewhere)
	}
	if st.Auto {
		s += " (down past the failed-broker grace)"
	}
	if st.Paused {
		s += "; rebalancing is paused: no move starts until `spool rebalance resume`"
	}
	return s
}

// WriteTable prints the progress line and the partitions left.
func (st DrainStatus) WriteTable(out io.Writer) error {
	fmt.Fprintln(out, st.Progress())
	if len(st.Partitions) == 0 {
		return nil
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tREPLICAS\tTARGET\tBLOCKED")
	for _, p := range st.Partitions {
		target := "-"
		if p.Target != nil {
			target = fmt.Sprint(p.Target)
		}
		fmt.Fprintf(w, "%s\t%d\t%v\t%s\t%s\n", p.Topic, p.Partition, p.Replicas, target, orDash(p.Blocked))
	}
	return w.Flush()
}
