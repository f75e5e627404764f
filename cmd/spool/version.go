package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionString is the release, the commit the binary was built from and
// whether that tree had uncommitted changes, from the VCS information Go
// stamps into binaries built in a checkout (go build, go install).
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(version, bi)
}

// versionFrom formats release and bi's VCS settings (bi may be nil).
func versionFrom(release string, bi *debug.BuildInfo) string {
	commit, when, modified := "unknown", "", false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	s := fmt.Sprintf("%s (commit %s", release, commit)
	if modified {
		s += ", modified"
	}
	if when != "" {
		s += ", " + when
	}
	return s + ")"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "spool version %s\n", versionString())
			return err
		},
	}
}
