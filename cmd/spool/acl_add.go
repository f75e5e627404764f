package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newACLAddCmd adds ALLOW (or, with --deny, DENY) bindings for one
// principal, one resource and each operation given.
func newACLAddCmd(g *globals) *cobra.Command {
	var res aclResourceFlags
	var principal, host string
	var operations []string
	var deny bool
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Allow (or deny) a principal operations on a resource",
		Example: `  spool acl add --principal User:alice --operation read,write --topic orders
  spool acl add --principal User:alice --operation read --group app- --pattern prefixed
  spool acl add --principal User:ops --operation alter,describe --cluster
  spool acl add --principal User:mallory --operation all --topic '*' --deny`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			typ, name, err := res.resource()
			if err != nil {
				return err
			}
			if typ == "" {
				return errors.New("give the resource: --topic, --group, --transactional-id or --cluster")
			}
			if principal == "" || len(operations) == 0 {
				return errors.New("give --principal (User:alice) and --operation")
			}
			perm := "allow"
			if deny {
				perm = "deny"
			}
			var acls []client.ACL
			for _, op := range operations {
				acls = append(acls, client.ACL{ResourceType: typ, Resource: name, Pattern: res.pattern,
					Principal: principal, Host: host, Operation: op, Permission: perm})
			}
			if err := g.CreateACLs(cmd.Context(), acls); err != nil {
				return err
			}
			for _, a := range acls {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s on %s %s from %s\n", perm, a.Principal, a.Operation, typ, name, host)
			}
			return nil
		},
	}
	res.register(cmd.Flags(), "literal or prefixed (default literal)")
	cmd.Flags().StringVar(&principal, "principal", "", "whom the binding is for: User:NAME (SASL user), User:CN=... (client certificate), User:* (every user)")
	cmd.Flags().StringVar(&host, "host", "*", "the client IP address the binding applies to, or * for any")
	cmd.Flags().StringSliceVar(&operations, "operation", nil, "operations: all, read, write, create, delete, alter, describe, describe-configs, alter-configs, idempotent-write, cluster-action (repeatable or comma-separated)")
	cmd.Flags().BoolVar(&deny, "deny", false, "add DENY bindings (deny wins over allow) instead of ALLOW")
	return cmd
}
