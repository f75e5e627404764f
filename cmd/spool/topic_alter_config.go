package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newTopicAlterConfigCmd changes a topic's configs with
// IncrementalAlterConfigs: each key=value is set, each --delete key returns
// to the broker default, and every other config stays as it is.
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
			topic := args[0]
			var alters []kadm.AlterConfig
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("%q: want key=value", kv)
				}
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
			}
			for _, k := range deletes {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
			if len(alters) == 0 {
				return fmt.Errorf("nothing to change: give key=value or --delete key")
			}
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			alter := adm.AlterTopicConfigs
			if validateOnly {
				alter = adm.ValidateAlterTopicConfigs
			}
			resps, err := alter(cmd.Context(), alters, topic)
			if err != nil {
				return fmt.Errorf("alter configs of %s: %w", topic, err)
			}
			r, err := resps.On(topic, nil)
			if err != nil {
				return fmt.Errorf("alter configs of %s: %w", topic, err)
			}
			if r.Err != nil {
				return fmt.Errorf("alter configs of %s: %v%s", topic, r.Err, errSuffix(r.ErrMessage))
			}
			verb := "altered"
			if validateOnly {
				verb = "validated"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s configs of %s\n", verb, topic)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&deletes, "delete", nil, "config key to return to the broker default, repeatable")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change on the node without making it")
	return cmd
}

// errSuffix is ": msg" for a node's error message, "" for none.
func errSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
