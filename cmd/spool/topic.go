package main

import "github.com/spf13/cobra"

func newTopicCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe and delete topics",
	}
	cmd.AddCommand(newTopicCreateCmd(g), newTopicListCmd(g), newTopicDescribeCmd(g), newTopicDeleteCmd(g), // topic_NAME.go
		newTopicAlterConfigCmd(g), newTopicAddPartitionsCmd(g), newTopicDeleteRecordsCmd(g), newTopicRestoreCmd(g))
	return cmd
}
