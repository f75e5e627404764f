package main

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/node/sasl"
)

// newUserHashCmd prints the credentials-file lines of a user: the password
// (read from stdin, never a flag) salted and hashed for each SCRAM
// mechanism. PLAIN is checked against the same lines.
func newUserHashCmd() *cobra.Command {
	var mechanisms []string
	var iterations int
	cmd := &cobra.Command{
		Use:   "hash USER",
		Short: "Print a user's SCRAM credential lines, the password read from stdin",
		Example: `  printf '%s\n' "$PASSWORD" | spool user hash alice >> users
  kill -HUP $(pidof spool)   # nodes reading users as --sasl-credentials-file`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			password := strings.TrimRight(line, "\r\n")
			if password == "" {
				if err != nil {
					return fmt.Errorf("read the password from stdin: %w", err)
				}
				return errors.New("empty password on stdin")
			}
			for _, m := range mechanisms {
				cred, err := sasl.NewScramCredential(strings.ToUpper(m), password, iterations)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), sasl.UserCredential{User: args[0], ScramCredential: cred}.Format())
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", []string{sasl.ScramSHA256, sasl.ScramSHA512}, "SCRAM-SHA-256 and/or SCRAM-SHA-512")
	cmd.Flags().IntVar(&iterations, "iterations", sasl.MinIteration, "PBKDF2 iterations (4096 to 16384)")
	return cmd
}
