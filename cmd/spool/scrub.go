package main

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node/scrub"
)

func newScrubCmd(g *globals) *cobra.Command {
	var start bool
	cmd := &cobra.Command{
		Use:   "scrub",
		Short: "Show what the node's CRC scrub and crash recovery found damaged",
		Long: `Show the background scrub of the node at --admin: its rate and passes, every
record batch it found damaged that is still in a log (fetches starting at one
get KAFKA_STORAGE_ERROR; everything before it is still served), and what crash
recovery cut from logs into DATA/quarantine since the node started.
--start asks for a pass now instead of at the next --scrub-interval.
See README.md, "Corrupt segments", for what to do about a finding.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			method := "GET"
			if start {
				method = "POST"
			}
			var st scrub.Status
			if err := g.adminJSON(cmd.Context(), method, "/v1/scrub", &st); err != nil {
				return err
			}
			if start {
				fmt.Fprintln(cmd.OutOrStdout(), "scrub pass requested")
			}
			printScrubStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&start, "start", false, "start a scrub pass now")
	return cmd
}

func printScrubStatus(out io.Writer, st scrub.Status) {
	if st.RateBytesPerSec == 0 {
		fmt.Fprintln(out, "scrubber: off (--scrub-rate 0)")
	} else {
		state := "idle"
		if st.Running {
			state = "running"
		}
		fmt.Fprintf(out, "scrubber: %s, %d bytes/s, a pass every %s; %d passes done", state, st.RateBytesPerSec, st.Interval, st.Passes)
		if !st.LastPassStart.IsZero() {
			fmt.Fprintf(out, ", last started %s", st.LastPassStart.Format(time.RFC3339))
		}
		fmt.Fprintf(out, "; %d bytes scrubbed, %d corrupt batches found since start\n", st.BytesScrubbed, st.CorruptBatches)
	}
	if len(st.Corrupt) == 0 {
		fmt.Fprintln(out, "no corrupt batch known in any local log")
	} else {
		fmt.Fprintln(out, "\nCORRUPT BATCHES (fetches starting at them fail with KAFKA_STORAGE_ERROR):")
		printFindings(out, st.Corrupt, false)
	}
	if len(st.Quarantined) > 0 {
		fmt.Fprintln(out, "\nCUT BY RECOVERY INTO QUARANTINE since the node started:")
		printFindings(out, st.Quarantined, true)
	}
}

func printFindings(out io.Writer, fs []scrub.Finding, quarantine bool) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "TOPIC\tPARTITION\tOFFSETS\tSEGMENT\tPOSITION\tBYTES\tREASON"
	if quarantine {
		head += "\tKEPT IN"
	}
	fmt.Fprintln(w, head)
	for _, f := range fs {
		offsets := fmt.Sprintf("%d-", f.Offset)
		if f.EndOffset > f.Offset {
			offsets = fmt.Sprintf("%d-%d", f.Offset, f.EndOffset-1)
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%d\t%d\t%s", f.Topic, f.Partition, offsets, filepath.Base(f.Segment), f.Position, f.Bytes, f.Reason)
		if quarantine {
			line += "\t" + f.Quarantine
		}
		fmt.Fprintln(w, line)
	}
	w.Flush()
}
