package client

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spool-log/spool/adminapi"
)

// The tables of the admin API's answers, as spool prints them.

// Members is the cluster's members as one node sees them.
type Members []adminapi.MemberInfo

// WriteTable prints the members as a table.
func (members Members) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tID\tSTATUS\tKAFKA\tGOSSIP\tRACK\tLED")
	for _, m := range members {
		led := "-"
		if m.Status == "alive" {
			led = strconv.Itoa(m.PartitionsLed)
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.ID, m.Status, m.KafkaAddr, m.GossipAddr, orDash(m.Rack), led)
	}
	return w.Flush()
}

// MemberEventLine is ev as one line of text; changed (from Changes) is
// appended to an update.
func MemberEventLine(ev adminapi.MemberEvent, changed []string) string {
	m := ev.Member
	when := "-"
	if !ev.Time.IsZero() {
		when = ev.Time.Format("2006-01-02T15:04:05.000Z07:00")
	}
	line := fmt.Sprintf("%s  %-6s  %s  id=%d  status=%s  kafka=%s  gossip=%s  rack=%s",
		when, ev.Type, m.Name, m.ID, m.Status, m.KafkaAddr, m.GossipAddr, orDash(m.Rack))
	if changed != nil {
		line += "  changed: " + strings.Join(changed, ", ")
	}
	return line
}

// Placements is where partitions are, and where hashing would put them.
type Placements []adminapi.PartitionPlacement

// WriteTable prints the placements as a table.
func (parts Placements) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tREPLICAS\tLEADER\tEPOCH\tISR\tOFFLINE\tPREFERRED\tDIFFERS")
	for _, p := range parts {
		leader := "none"
		if p.Leader >= 0 {
			leader = fmt.Sprint(p.Leader)
		}
		differs := ""
		if p.Differs {
			differs = "*"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, idList(p.Replicas), leader,
			epochOrDash(p.LeaderEpoch), idList(p.ISR), idList(p.Offline), idList(p.Preferred), differs)
	}
	return w.Flush()
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// QuarantineEntries is what a node set aside instead of deleting it.
type QuarantineEntries []adminapi.QuarantineEntry

// WriteTable prints the entries as a table.
func (entries QuarantineEntries) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tDROPPED\tBYTES\tPATH")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", e.Name, e.Dropped.UTC().Format(time.RFC3339), e.Bytes, e.Path)
	}
	return w.Flush()
}

// WriteScrubStatus prints the scrubber's state and its findings.
func WriteScrubStatus(out io.Writer, st adminapi.ScrubStatus) {
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
		writeFindings(out, st.Corrupt, false)
	}
	if len(st.Quarantined) > 0 {
		fmt.Fprintln(out, "\nCUT BY RECOVERY INTO QUARANTINE since the node started:")
		writeFindings(out, st.Quarantined, true)
	}
	if len(st.Repairs) > 0 {
		fmt.Fprintf(out, "\nREPLICAS REBUILT FROM THEIR PEERS (%d started, %d repaired since the node started):\n", st.RepairsStarted, st.RepairsDone)
		writeRepairs(out, st.Repairs)
	}
}

// writeRepairs lists damaged replicas rebuilt from their peers, or
// waiting to be.
func writeRepairs(out io.Writer, rs []adminapi.ScrubRepair) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tSTATE\tDAMAGED OFFSETS\tFOUND\tREPAIRED\tDETAIL\tDAMAGED COPY KEPT IN")
	for _, r := range rs {
		var offsets []string
		for _, c := range r.Damage {
			if c.EndOffset > c.Offset {
				offsets = append(offsets, fmt.Sprintf("%d-%d", c.Offset, c.EndOffset-1))
			} else {
				offsets = append(offsets, fmt.Sprintf("%d-", c.Offset))
			}
		}
		repaired := "-"
		if !r.RepairedAt.IsZero() {
			repaired = r.RepairedAt.Format(time.RFC3339)
		}
		kept := r.Quarantine
		if kept == "" {
			kept = "-"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Topic, r.Partition, r.State, strings.Join(offsets, ","),
			r.FoundAt.Format(time.RFC3339), repaired, r.Detail, kept)
	}
	w.Flush()
}

func writeFindings(out io.Writer, fs []adminapi.ScrubFinding, quarantine bool) {
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

// PrintWatch prints a watch: the members and each event as one line of
// text to out, or as the node's JSON lines with asJSON; what the watch does
// goes to status. In text, an update that changes nothing
// shown is left out, and one that does says what.
func PrintWatch(out, status io.Writer, asJSON bool) MemberWatch {
	event := func(ev adminapi.MemberEvent, old adminapi.MemberInfo, had bool) {
		if asJSON {
			line, _ := json.Marshal(ev)
			fmt.Fprintf(out, "%s\n", line)
			return
		}
		var changed []string
		if ev.Type == "update" && had {
			if changed = Changes(old, ev.Member); changed == nil {
				return
			}
		}
		fmt.Fprintln(out, MemberEventLine(ev, changed))
	}
	return MemberWatch{
		Members: func(addr string, members []adminapi.MemberInfo) {
			fmt.Fprintf(status, "watching membership events at %s; interrupt to stop\n", addr)
			if !asJSON {
				Members(members).WriteTable(out)
				return
			}
			for _, m := range members {
				line, _ := json.Marshal(adminapi.MemberEvent{Type: "member", Member: m})
				fmt.Fprintf(out, "%s\n", line)
			}
		},
		Event: event,
		Moved: func(from, to string, err error) {
			fmt.Fprintf(status, "spool: the node at %s stopped answering (%v); watching through %s\n", from, err, to)
		},
	}
}

// epochOrDash shows a leader epoch, "-" when unknown (-1).
func epochOrDash(epoch int32) string {
	if epoch < 0 {
		return "-"
	}
	return fmt.Sprint(epoch)
}
