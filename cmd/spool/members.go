package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
	"github.com/spool-log/spool/node/admin"
)

func newMembersCmd(g *globals) *cobra.Command {
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members as one node's gossip sees them",
		Long: `List the cluster's members as the --admin node sees them: name, broker id,
status (alive, failed or left), Kafka and gossip addresses, rack and how many
partitions each leads. With --watch, print the members first, then stream join,
fail, leave, update and reap events as they happen, one line each (an update
says what changed), until interrupted; when the watched node goes away, the
watch moves to another live member.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			if watch {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return g.WatchMembers(ctx, memberWatch(cmd, output == "json"))
			}
			members, err := g.Members(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return client.WriteJSON(cmd.OutOrStdout(), members)
			}
			client.WriteMembers(cmd.OutOrStdout(), members)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json (one JSON object per line with --watch)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "stream membership events until interrupted")
	return cmd
}

// memberWatch prints a watch: each event as one line of text, or as the
// node's JSON line with -o json. In text, an update that changes nothing
// shown is left out, and one that does says what.
func memberWatch(cmd *cobra.Command, asJSON bool) client.MemberWatch {
	out, status := cmd.OutOrStdout(), cmd.ErrOrStderr()
	event := func(ev admin.MemberEvent, old admin.MemberInfo, had bool) {
		if asJSON {
			line, _ := json.Marshal(ev)
			fmt.Fprintf(out, "%s\n", line)
			return
		}
		var changed []string
		if ev.Type == "update" && had {
			if changed = client.Changes(old, ev.Member); changed == nil {
				return
			}
		}
		fmt.Fprintln(out, client.MemberEventLine(ev, changed))
	}
	return client.MemberWatch{
		Members: func(addr string, members []admin.MemberInfo) {
			fmt.Fprintf(status, "watching membership events at %s; interrupt to stop\n", addr)
			if !asJSON {
				client.WriteMembers(out, members)
				return
			}
			for _, m := range members {
				line, _ := json.Marshal(admin.MemberEvent{Type: "member", Member: m})
				fmt.Fprintf(out, "%s\n", line)
			}
		},
		Event: event,
		Moved: func(from, to string, err error) {
			fmt.Fprintf(status, "spool: the node at %s stopped answering (%v); watching through %s\n", from, err, to)
		},
	}
}
