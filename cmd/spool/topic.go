package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe and delete topics",
	}
	cmd.AddCommand(newTopicCreateCmd(g), newTopicListCmd(g), newTopicDescribeCmd(g), newTopicDeleteCmd(g)) // topic_NAME.go
	cmd.AddCommand(newTopicAlterConfigCmd(g))   // topic_alter_config.go
	cmd.AddCommand(newTopicAddPartitionsCmd(g)) // topic_add_partitions.go
	cmd.AddCommand(newTopicDeleteRecordsCmd(g)) // topic_delete_records.go
	return cmd
}

// isShardErrors reports whether err is kadm's partial failure: some partitions
// answered, others (say, those whose leader is down) did not.
func isShardErrors(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}
