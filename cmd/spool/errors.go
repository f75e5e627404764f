package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// clientOnlyFlags are the root's flags that only the client commands read.
var clientOnlyFlags = append([]string{"brokers", "admin", "timeout"}, clientSecurityFlagNames...)

// rejectClientFlags refuses client-only flags given to a command that
// ignores them (spool node), rather than silently running without them.
func rejectClientFlags(cmd *cobra.Command) error {
	for _, name := range clientOnlyFlags {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("--%s is for the client commands; spool %s does not use it (spool %s --help lists its flags: --kafka-addr, --admin-addr, --gossip-addr, --join, ...)", name, cmd.Name(), cmd.Name())
		}
	}
	return nil
}

// explainAddrInUse names the flag to change when a listener's port is
// taken: the flag among cmd's whose host:port the error mentions.
func explainAddrInUse(cmd *cobra.Command, err error) error {
	if err == nil || !(errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")) {
		return err
	}
	var flag, addr string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		v := f.Value.String()
		if flag != "" || f.Value.Type() != "string" || !strings.HasSuffix(f.Name, "-addr") || strings.HasPrefix(f.Name, "advertise") {
			return
		}
		if _, port, e := net.SplitHostPort(v); e == nil && port != "0" && strings.Contains(err.Error(), ":"+port) {
			flag, addr = f.Name, v
		}
	})
	if flag == "" {
		return err
	}
	return fmt.Errorf("%w\n--%s %s is in use (another spool node still running?): stop it, or give another port with --%s (%s)",
		err, flag, addr, flag, envName(flag))
}
