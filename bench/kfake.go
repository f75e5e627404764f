//go:build benchkfake

package bench

// Built only with -tags benchkfake: a fake broker has no place in the
// binary users run.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Kfake starts franz-go's kfake broker as one node on addr, so a comparison
// can drive it with the same load as a Spool node. With dataDir it keeps its
// log on disk (segments and indexes, written without fsync unless
// syncWrites) as well as in memory, as kfake always does. Topics are
// auto-created. Close the cluster to stop it.
func Kfake(addr, dataDir string, syncWrites bool) (*kfake.Cluster, error) {
	_, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", addr, err)
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
		return nil, fmt.Errorf("kfake: %w", err)
	}
	return c, nil
}
