package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "9f9ab57cf63b338137d39a51a8144b2d5aeef652"},
		{Key: "vcs.time", Value: "2026-11-30T21:20:16Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	if got, want := versionFrom("0.1.0", bi), "0.1.0 (commit 9f9ab57cf63b338137d39a51a8144b2d5aeef652, modified, 2026-11-30T21:20:16Z)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := versionFrom("dev", nil), "dev (commit unknown)"; got != want {
		t.Errorf("without build info: %q, want %q", got, want)
	}
}

func TestVersionCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := runCLI(t, "", args...)
		if err != nil {
			t.Fatalf("spool %v: %v", args, err)
		}
		if want := "spool version " + versionString() + "\n"; out != want {
			t.Errorf("spool %v printed %q, want %q", args, out, want)
		}
		if !strings.Contains(out, "(commit ") {
			t.Errorf("spool %v does not name the commit: %q", args, out)
		}
	}
}
