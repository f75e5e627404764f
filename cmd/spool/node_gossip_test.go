package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/spool-log/spool/node"
)

func parseGossipFlags(t *testing.T, args ...string) (node.Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	var g gossipFlags
	addGossipFlags(fs, &g)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := bindEnv(fs); err != nil {
		return node.Config{}, err
	}
	var cfg node.Config
	err := g.apply(&cfg)
	return cfg, err
}

func TestAdvertiseAdminAddrFlag(t *testing.T) {
	cfg, err := parseGossipFlags(t, "--advertise-admin-addr=spool-1.internal:9644")
	if err != nil || cfg.Gossip.AdvertiseAdminAddr != "spool-1.internal:9644" {
		t.Fatalf("flag: %q, %v", cfg.Gossip.AdvertiseAdminAddr, err)
	}

	t.Setenv("SPOOL_ADVERTISE_ADMIN_ADDR", "10.0.0.1:9644")
	cfg, err = parseGossipFlags(t)
	if err != nil || cfg.Gossip.AdvertiseAdminAddr != "10.0.0.1:9644" {
		t.Fatalf("environment: %q, %v", cfg.Gossip.AdvertiseAdminAddr, err)
	}

	for _, bad := range []string{"no-port", "0.0.0.0:9644", "[::]:9644", ":9644"} {
		if _, err := parseGossipFlags(t, "--advertise-admin-addr="+bad); err == nil || !strings.Contains(err.Error(), "advertise-admin-addr") {
			t.Errorf("--advertise-admin-addr=%s: %v, want a refusal", bad, err)
		}
	}
}
