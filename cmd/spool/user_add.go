package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// userPasswordEnv holds the new user's password when no file is given.
const userPasswordEnv = "SPOOL_USER_PASSWORD"

// newUserAddCmd creates a cluster user or changes its password for one
// mechanism. The password never comes from a flag: --password-file, else
// SPOOL_USER_PASSWORD, else one line of stdin (no prompt, no echo games).
func newUserAddCmd(g *globals) *cobra.Command {
	var passwordFile, mechanism string
	var iterations int32
	cmd := &cobra.Command{
		Use:   "add USER",
		Short: "Add a SCRAM user to the cluster, or change its password",
		Example: `  spool user add alice --password-file alice.pw
  printf '%s\n' "$PASSWORD" | spool user add alice --mechanism SCRAM-SHA-256`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			password, err := readNewPassword(passwordFile, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if err := g.AddUser(cmd.Context(), args[0], password, mechanism, iterations); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: %s set (%d iterations)\n", args[0], strings.ToUpper(mechanism), iterations)
			return nil
		},
	}
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "file whose first line is the password (else "+userPasswordEnv+", else a line of stdin)")
	cmd.Flags().StringVar(&mechanism, "mechanism", "SCRAM-SHA-512", "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().Int32Var(&iterations, "iterations", 8192, "PBKDF2 iterations (4096 to 16384)")
	return cmd
}

// readNewPassword is the first line of file, else SPOOL_USER_PASSWORD,
// else the first line of stdin.
func readNewPassword(file string, stdin io.Reader) (string, error) {
	var r io.Reader
	var from string
	switch {
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("password file: %w", err)
		}
		defer f.Close()
		r, from = f, file
	case os.Getenv(userPasswordEnv) != "":
		return os.Getenv(userPasswordEnv), nil
	default:
		r, from = stdin, "stdin"
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the password from %s: %w", from, err)
		}
		return "", fmt.Errorf("no password: give --password-file, %s or a line on stdin (read %s)", userPasswordEnv, from)
	}
	return password, nil
}
