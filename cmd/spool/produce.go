package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newProduceCmd(g *globals) *cobra.Command {
	var o client.ProduceOptions
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Produce one record per line of stdin",
		Long: `Produce one record per line of standard input. With --key-separator, the text
before the first separator is the key and the rest the value. With --partition,
every record goes to that partition; otherwise keyed records go where Kafka's
Java client would put them (murmur2 of the key) and unkeyed ones go round-robin
over the partitions that have a leader.

The topic must exist (spool topic create). Once the input ends, spool produce
waits at most --timeout for acknowledgements; it then says how many records
each partition took and which were not written, and exits non-zero if any were
not. A record larger than the topic's max.message.bytes (or --max-record-bytes)
is refused.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			po := o
			po.Topic, po.Input = args[0], cmd.InOrStdin()
			res, err := g.Produce(cmd.Context(), po)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "produced %s\n", res)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.KeySeparator, "key-separator", "", "split each line into key and value at the first occurrence of this string")
	cmd.Flags().Int32Var(&o.Partition, "partition", -1, "send every record to this partition (-1: let the partitioner choose)")
	cmd.Flags().Int32Var(&o.MaxRecordBytes, "max-record-bytes", 0, "largest record batch to send, in bytes (0: the topic's max.message.bytes)")
	return cmd
}
