package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// Shell completion (cobra's `spool completion bash|zsh|fish|powershell`)
// completes topic and group names by asking the --brokers node, briefly: a
// node that does not answer gives no suggestions rather than a stuck shell.

const completionTimeout = 2 * time.Second

// completeTopics suggests the cluster's topic names.
func completeTopics(g *globals) cobra.CompletionFunc {
	return completeNames(g, client.Config.TopicNames)
}

// completeGroups suggests the cluster's consumer group names.
func completeGroups(g *globals) cobra.CompletionFunc {
	return completeNames(g, client.Config.GroupNames)
}

// completeNames suggests the names list finds, asking the cluster for at
// most completionTimeout so a shell never hangs on a node that is down.
func completeNames(g *globals, list func(client.Config, context.Context) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		g.applyEnv(cmd)
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		c := g.Config
		c.Timeout = min(c.Timeout, completionTimeout)
		return matching(list(c, ctx), toComplete, args), cobra.ShellCompDirectiveNoFileComp
	}
}

// matching is the names starting with prefix, not already given, sorted.
func matching(names []string, prefix string, given []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(given, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
