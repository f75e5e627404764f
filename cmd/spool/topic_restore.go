package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// restoreConfigs are what makes a create a restore: a tiered topic whose new
// partitions start from the store's copy of their manifests (node/tier's
// restore.go), as Redpanda's redpanda.remote.recovery=true.
var restoreConfigs = []string{"remote.storage.enable=true", "remote.storage.recovery=true"}

func newTopicRestoreCmd(g *globals) *cobra.Command {
	var o client.CreateTopicsOptions
	cmd := &cobra.Command{
		Use:   "restore TOPIC...",
		Short: "Recreate tiered topics from the remote store after all their replicas lost their disks",
		Long: `Recreate tiered topics from the remote store after all their replicas lost
their disks (a cluster rebuilt on new disks against the same bucket and
prefix, or a topic that no node holds any more).

The topic is created with remote.storage.enable=true and
remote.storage.recovery=true (Redpanda's redpanda.remote.recovery): each
partition starts from the store's copy of its manifest, so the records up
to its last uploaded segment are read from the store (a consumer from the
start gets them back, in order, at their old offsets), and new records are
numbered after them. Records that were not uploaded yet are not restored.
Give the topic's old partition count (-p); a partition the store holds
nothing for starts empty. The nodes need the store (--remote-storage-*).
'spool topic describe' then shows each partition's remote and local start.

Only a new topic is restored: an existing one is left as it is (and
reported as existing, as 'spool topic create' does).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Names = args
			o.Configs = append(o.Configs, restoreConfigs...)
			created, err := g.CreateTopics(cmd.Context(), o)
			for _, c := range created {
				if c.Existed {
					fmt.Fprintln(cmd.OutOrStdout(), c)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restoring %s from the remote store\n", c)
			}
			return err
		},
	}
	cmd.Flags().Int32VarP(&o.Partitions, "partitions", "p", -1, "partitions, as the topic had (-1: the node's default)")
	cmd.Flags().Int16VarP(&o.ReplicationFactor, "replication-factor", "r", -1, "replicas per partition (-1: the default)")
	cmd.Flags().StringArrayVarP(&o.Configs, "config", "c", nil, "more topic configs key=value, repeatable (local.retention.bytes, retention.ms, ...)")
	return cmd
}
