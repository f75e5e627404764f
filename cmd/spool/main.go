// Command spool runs a Spool node and talks to one: `spool node` serves the
// Kafka protocol; `spool topic`, `spool produce` and `spool consume` are small
// clients built on franz-go for operators and scripts.
//
// Every flag has a SPOOL_* environment equivalent: the flag name upper-cased
// with dashes as underscores (--data-dir is SPOOL_DATA_DIR, --brokers is
// SPOOL_BROKERS). A flag given on the command line wins over the environment.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spool-log/spool/client"
)

// version is the release this binary was built from; builds stamp it with
// -ldflags "-X main.version=..." (the Nix package does).
var version = "dev"

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "spool:", err)
		exit(err) // exit_status.go
	}
}

// globals are the flags every client command shares: where the cluster is.
type globals struct {
	client.Config
	security clientSecurityFlags // client_security.go
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "spool",
		Short:         "Spool: a distributed log that speaks the Kafka protocol",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// Before the environment fills flags in: SPOOL_BROKERS exported
			// for the client commands is no mistake when starting a node.
			if cmd.Name() == "node" && cmd.Parent() == cmd.Root() {
				if err := rejectClientFlags(cmd); err != nil {
					return err
				}
				// Name the flag to change when a port is taken.
				if run := cmd.RunE; run != nil {
					cmd.RunE = func(cmd *cobra.Command, args []string) error {
						return explainAddrInUse(cmd, run(cmd, args))
					}
				}
			}
			if err := bindEnv(cmd.Flags()); err != nil {
				return err
			}
			if cmd.Name() == "node" && cmd.Parent() == cmd.Root() {
				return nil
			}
			return g.security.apply(g)
		},
	}
	root.AddCommand(newVersionCmd())
	root.SetVersionTemplate("spool version {{.Version}}\n")
	root.PersistentFlags().StringVar(&g.Brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka addresses of Spool nodes (SPOOL_BROKERS)")
	root.PersistentFlags().StringVar(&g.AdminAddr, "admin", "127.0.0.1:9644", "admin HTTP address (host:port) of a Spool node, for members, placement and decommission (SPOOL_ADMIN)")
	root.PersistentFlags().DurationVar(&g.Timeout, "timeout", 10*time.Second, "how long client commands wait for a node to answer (SPOOL_TIMEOUT)")
	addClientSecurityFlags(root.PersistentFlags(), &g.security)
	root.AddCommand(newNodeCmd(), newTopicCmd(g), newProduceCmd(g), newConsumeCmd(g), newGroupCmd(g), newBenchCmd(g),
		newMembersCmd(g), newPlacementCmd(g), newDecommissionCmd(g), newQuarantineCmd(g), newScrubCmd(g), newUserCmd(g), newACLCmd(g), newQuotaCmd(g),
		newTxnCmd(g), newPartitionCmd(g), newRebalanceCmd(g), newGossipKeyCmd(g), newDocsCmd())
	return root
}

// envName is the environment variable standing for a flag.
func envName(flag string) string {
	return "SPOOL_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv sets every flag not given on the command line from its SPOOL_*
// variable, if that is set.
func bindEnv(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
		}
	})
	return err
}

// applyEnv binds SPOOL_* variables for paths that skip PersistentPreRunE,
// such as shell completion.
func (g *globals) applyEnv(cmd *cobra.Command) {
	_ = bindEnv(cmd.Flags())
	_ = g.security.apply(g)
}
