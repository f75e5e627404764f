package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Shell completion (cobra's `spool completion bash|zsh|fish|powershell`)
// completes topic and group names by asking the --brokers node, briefly: a
// node that does not answer gives no suggestions rather than a stuck shell.

const completionTimeout = 2 * time.Second

// completeTopics suggests the cluster's topic names.
func completeTopics(g *globals) cobra.CompletionFunc {
	return completeNames(g, func(ctx context.Context, adm *kadm.Client) []string {
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			return nil
		}
		return topics.Names()
	})
}

// completeGroups suggests the cluster's consumer group names.
func completeGroups(g *globals) cobra.CompletionFunc {
	return completeNames(g, func(ctx context.Context, adm *kadm.Client) []string {
		groups, _ := adm.ListGroups(ctx) // what answered is worth offering
		return groups.Groups()
	})
}

// completeNames suggests the names list finds, asking the cluster for at
// most completionTimeout so a shell never hangs on a node that is down.
func completeNames(g *globals, list func(context.Context, *kadm.Client) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		g.applyEnv(cmd)
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		g2 := *g
		g2.Timeout = min(g.Timeout, completionTimeout)
		adm, done, err := g2.Admin(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		return matching(list(ctx, adm), toComplete, args), cobra.ShellCompDirectiveNoFileComp
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
