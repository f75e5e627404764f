package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/client"
)

func newConsumeCmd(g *globals) *cobra.Command {
	var (
		o         client.ConsumeOptions
		printKeys bool
		keySep    string
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Print records of a topic, one value per line",
		Long: `Print records of a topic, one value per line (key, separator, value with
--print-keys). --from is where to start in each partition: beginning (or
earliest), end (or latest), an offset, -N for the last N records, or time:
with an RFC 3339 time or a duration back from now (time:-1h). Without
--follow it stops at the end offsets seen when it started; -n stops after N
records.

Only the partitions read are asked for: with --partition, that one; for the
whole topic, the partitions whose leader is down are named on stderr, the
others are read, and the exit status is non-zero once it stops.

With --group, it joins that consumer group and commits its progress as it
goes (and when it stops); --from then applies only to partitions the group
has no committed offset for.

With --share-group, it reads as a member of that share group (KIP-932):
the group's members split the records one by one, each record is
accepted once printed; where a new group starts is its
share.auto.offset.reset, not --from. Without --follow it stops once
nothing has come for 2 s.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := bufio.NewWriter(cmd.OutOrStdout())
			defer out.Flush()
			co := o
			co.Topic = args[0]
			co.Warn = func(msg string) { fmt.Fprintf(cmd.ErrOrStderr(), "spool: %s\n", msg) }
			co.Records = func(rs []*kgo.Record) error {
				for _, r := range rs {
					if printKeys {
						out.Write(r.Key)
						out.WriteString(keySep)
					}
					out.Write(r.Value)
					out.WriteByte('\n')
				}
				return out.Flush()
			}
			return g.Consume(cmd.Context(), co)
		},
	}
	cmd.Flags().StringVar(&o.From, "from", "beginning", "where to start: "+client.FromVocabulary)
	cmd.Flags().IntVarP(&o.Count, "count", "n", 0, "stop after this many records (0: no limit)")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep waiting for new records instead of stopping at the end")
	cmd.Flags().BoolVar(&printKeys, "print-keys", false, "print each record's key and --key-separator before its value")
	cmd.Flags().StringVar(&keySep, "key-separator", "\t", "what --print-keys puts between key and value")
	cmd.Flags().Int32Var(&o.Partition, "partition", -1, "read only this partition (-1: all)")
	cmd.Flags().StringVarP(&o.Group, "group", "g", "", "consume as a member of this consumer group, committing offsets as it goes")
	cmd.RegisterFlagCompletionFunc("group", completeGroups(g))
	cmd.Flags().StringVar(&o.ShareGroup, "share-group", "", "consume as a member of this share group, accepting each record printed")
	return cmd
}
