package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newTopicAlterConfigCmd changes a topic's configs; configs not named stay
// as they are.
func newTopicAlterConfigCmd(g *globals) *cobra.Command {
	var (
		deletes      []string
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "alter-config TOPIC [key=value...] [--delete key...]",
		Short: "Set or remove topic configs (retention.ms, cleanup.policy, ...)",
		Long: "Set each key=value on the topic and return each --delete key to the broker default;\n" +
			"configs not named are left as they are. Unknown keys and bad values are refused.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.AlterTopicConfigs(cmd.Context(), args[0], args[1:], deletes, validateOnly); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s configs of %s\n", pick(validateOnly, "validated", "altered"), args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "config key to return to the broker default, repeatable")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change on the node without making it")
	return cmd
}
