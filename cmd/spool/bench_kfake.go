//go:build benchkfake

package main

// `spool bench kfake` runs franz-go's kfake broker, so the comparison script
// can drive it with the same load as a Spool node. It is built only with
// -tags benchkfake: a fake broker has no place in the binary users run.

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
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
			_, portStr, err := net.SplitHostPort(addr)
			if err != nil {
				return fmt.Errorf("--addr %q: %w", addr, err)
			}
			port, err := strconv.Atoi(portStr)
			if err != nil {
				return fmt.Errorf("--addr %q: %w", addr, err)
			}
			opts := []kfake.Opt{
				kfake.NumBrokers(1),
				kfake.Ports(port),
				kfake.AllowAutoTopicCreation(),
				kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
			}
			if dataDir != "" {
				opts = append(opts, kfake.DataDir(dataDir))
			}
			if syncWrites {
				opts = append(opts, kfake.SyncWrites())
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				return fmt.Errorf("kfake: %w", err)
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
