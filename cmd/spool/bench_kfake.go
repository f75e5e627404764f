//go:build benchkfake

package main

// `spool bench kfake` runs franz-go's kfake broker, so the comparison script
// can drive it with the same load as a Spool node. It is built only with
// -tags benchkfake: a fake broker has no place in the binary users run.

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/bench"
)

func init() { benchExtraCommands = append(benchExtraCommands, newBenchKfakeCmd) }

func newBenchKfakeCmd(*globals) *cobra.Command {
	var (
		addr       string
		dataDir    string
		syncWrites bool
	)
	cmd := &cobra.Command{
		Use:   "kfake",
		Short: "Run franz-go's kfake broker (one node, on-disk storage) for comparison",
		Long: `Run franz-go's kfake broker as one node on --addr until SIGINT or SIGTERM.
With --data-dir it keeps its log on disk (segments and indexes, written
without fsync unless --sync-writes), as well as in memory, as kfake always does.
Topics are auto-created.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := bench.Kfake(addr, dataDir, syncWrites)
			if err != nil {
				return err
			}
			defer c.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "kfake listening on %v (data dir %q)\n", c.ListenAddrs(), dataDir)
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			select {
			case <-sig:
			case <-cmd.Context().Done():
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:9092", "host:port to listen on (loopback)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "keep the log on disk here (empty: memory only)")
	cmd.Flags().BoolVar(&syncWrites, "sync-writes", false, "fsync every batch")
	return cmd
}
