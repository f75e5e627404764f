package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spool-log/spool/adminapi"
)

// RebalanceStatus is the moves under way, as the AdminAddr node gathers
// them from their partitions' leaders (GET /v1/rebalance).
type RebalanceStatus adminapi.RebalanceStatus

// RebalanceStatus asks the AdminAddr node for every move under way.
func (g Config) RebalanceStatus(ctx context.Context) (RebalanceStatus, error) {
	var st RebalanceStatus
	return st, g.adminJSON(ctx, "GET", "/v1/rebalance", &st)
}

// PauseRebalance pauses (or, paused false, resumes) moves cluster-wide.
func (g Config) PauseRebalance(ctx context.Context, paused bool) (RebalanceStatus, error) {
	path := "/v1/rebalance/resume"
	if paused {
		path = "/v1/rebalance/pause"
	}
	var st RebalanceStatus
	return st, g.adminJSON(ctx, "POST", path, &st)
}

// progressWidth is a progress bar's width in characters.
const progressWidth = 20

// progressBar draws done of total: [#####.....]  50%.
func progressBar(done, total int64) string {
	if total <= 0 {
		return "[" + strings.Repeat("?", progressWidth) + "]    ?"
	}
	frac := min(max(float64(done)/float64(total), 0), 1)
	n := int(frac * progressWidth)
	return fmt.Sprintf("[%s%s] %3.0f%%", strings.Repeat("#", n), strings.Repeat(".", progressWidth-n), frac*100)
}

// eta estimates what is left from the rate so far: "-" when nothing moved yet.
func eta(done, total int64, elapsed time.Duration) string {
	if done <= 0 || total <= 0 || elapsed <= 0 {
		return "-"
	}
	if done >= total {
		return "0s"
	}
	left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	return left.Round(time.Second).String()
}

// WriteTable prints one line per moving partition with its bar, step,
// elapsed time and estimate, then the overall bar.
func (st RebalanceStatus) WriteTable(out io.Writer) error {
	now := time.Now()
	if st.Paused {
		fmt.Fprintln(out, "rebalancing is PAUSED: no move takes a step until `spool rebalance resume`")
	}
	if len(st.Moves) == 0 {
		_, err := fmt.Fprintln(out, "no move under way")
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tFROM\tTO\tLEADER\tSTEP\tPROGRESS\tCOPIED\tELAPSED\tETA")
	var oldest time.Time
	for _, m := range st.Moves {
		elapsed, el := time.Duration(0), "-"
		if m.StartedMs > 0 {
			started := time.UnixMilli(m.StartedMs)
			elapsed = now.Sub(started)
			el = elapsed.Round(time.Second).String()
			if oldest.IsZero() || started.Before(oldest) {
				oldest = started
			}
		}
		step, bar, est, copied := m.Step, progressBar(m.BytesCopied, m.BytesToCopy), eta(m.BytesCopied, m.BytesToCopy, elapsed), fmt.Sprintf("%s/%s", humanBytes(m.BytesCopied), humanBytes(m.BytesToCopy))
		if m.Step == adminapi.StepUnknown {
			bar, est, copied = progressBar(0, 0), "-", "?"
			if m.Error != "" {
				step += " (" + m.Error + ")"
			}
		}
		if st.Paused {
			est = "paused"
		}
		leader := "-"
		if m.Leader >= 0 {
			leader = fmt.Sprint(m.Leader)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Topic, m.Partition, formatBrokers(m.Replicas), formatBrokers(m.Target),
			leader, step, bar, copied, el, est)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	var elapsed time.Duration
	if !oldest.IsZero() {
		elapsed = now.Sub(oldest)
	}
	est := eta(st.BytesCopied, st.BytesToCopy, elapsed)
	if st.Paused {
		est = "paused"
	}
	_, err := fmt.Fprintf(out, "overall %s  %s of %s copied, %d partitions moving, eta %s\n",
		progressBar(st.BytesCopied, st.BytesToCopy), humanBytes(st.BytesCopied), humanBytes(st.BytesToCopy), len(st.Moves), est)
	return err
}

// humanBytes is n in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}
