package main

import "github.com/spf13/cobra"

func newUserCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the cluster's SASL/SCRAM users, or make credentials-file lines",
		Long: `add, delete and list manage the cluster's SCRAM users over the Kafka protocol
(AlterUserScramCredentials, DescribeUserScramCredentials): a change made
through any node reaches every node by gossip, within seconds, and is kept on
each node's disk. hash prints lines for a node's own --sasl-credentials-file;
where a node's file (or --sasl-bootstrap-user) and the cluster both define a
user and mechanism, the node's own credential wins on that node.`,
	}
	cmd.AddCommand(newUserHashCmd(), newUserAddCmd(g), newUserDeleteCmd(g), newUserListCmd(g)) // user_NAME.go
	return cmd
}
