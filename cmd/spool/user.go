package main

import "github.com/spf13/cobra"

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Make SASL credentials for a node's --sasl-credentials-file",
		Long: `SASL users are node-local for now: each node reads them from its
--sasl-credentials-file (and may have a --sasl-bootstrap-user). Give every node
the same file; a SIGHUP makes a node read it again. Cluster-wide management
(AlterUserScramCredentials, spool user add/delete/list) is not built yet.`,
	}
	cmd.AddCommand(newUserHashCmd()) // user_NAME.go
	return cmd
}
