package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/client"
)

func newGossipKeyCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gossip-key",
		Short: "Rotate the cluster's gossip key (which also authenticates Raft replication)",
		Long: `Change the gossip keyring of every member of the --admin node's cluster, through
Serf's key manager. A rotation is three steps, each run once and each waiting
for every member's answer:

  spool gossip-key install --key-file new.key   # every node learns the new key
  spool gossip-key use     --key-file new.key   # every node encrypts with it
  spool gossip-key remove  --key-file old.key   # the old key is gone

The Raft replication transport authenticates peers with the same keyring (any
key of it), so replication keeps going through every step. Nodes keep the
change in their --keyring-file; start them with one, or a restart goes back to
--gossip-key-file. A step some member did not answer says which; fix it and run
the step again (every step can be repeated). list shows each key by
fingerprint (never the key) with how many nodes hold it and use it.`,
	}
	cmd.AddCommand(newGossipKeyListCmd(g))
	for _, op := range client.GossipKeyOps {
		cmd.AddCommand(newGossipKeyChangeCmd(g, op))
	}
	return cmd
}

func newGossipKeyListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the keys the cluster's members hold, by fingerprint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			r, err := g.GossipKeys(cmd.Context())
			if err != nil {
				return err
			}
			return printKeyring(cmd, output, r)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

var gossipKeyShort = map[string]string{
	"install": "Add a key to every member's gossip keyring",
	"use":     "Make an installed key every member's primary gossip key",
	"remove":  "Remove a key that is no member's primary from every keyring",
}

func newGossipKeyChangeCmd(g *globals, op string) *cobra.Command {
	var output, keyFile string
	cmd := &cobra.Command{
		Use:   op + " --key-file FILE",
		Short: gossipKeyShort[op],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			key, err := readKeyFile(cmd, keyFile)
			if err != nil {
				return err
			}
			r, err := g.ChangeGossipKey(cmd.Context(), op, key)
			if err != nil {
				return err
			}
			return printKeyring(cmd, output, r)
		},
	}
	addOutputFlag(cmd, &output)
	// The key comes from a file or stdin, never the command line, where
	// it would show in ps and shell history.
	cmd.Flags().StringVar(&keyFile, "key-file", "", "file holding the base64 key (head -c32 /dev/urandom | base64), - for stdin (SPOOL_KEY_FILE)")
	return cmd
}

func readKeyFile(cmd *cobra.Command, path string) (string, error) {
	var raw []byte
	var err error
	switch path {
	case "":
		return "", fmt.Errorf("--key-file is required (- reads the key from stdin)")
	case "-":
		raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
	default:
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("--key-file: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

func printKeyring(cmd *cobra.Command, output string, r adminapi.GossipKeyring) error {
	if output == "json" {
		return client.WriteJSON(cmd.OutOrStdout(), r)
	}
	client.WriteGossipKeyring(cmd.OutOrStdout(), r)
	return nil
}
