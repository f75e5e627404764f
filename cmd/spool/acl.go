package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/client"
)

func newACLCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Manage the cluster's ACLs",
		Long: `add, list and delete manage the cluster's ACLs over the Kafka protocol
(CreateAcls, DescribeAcls, DeleteAcls), as Kafka's kafka-acls does: a change
made through any node reaches every node by gossip, within seconds, and is
kept on each node's disk. They need ALTER (add, delete) or DESCRIBE (list) on
the cluster, or a super user (spool node --super-users).

Semantics are Kafka's: a request is allowed when an ALLOW binding for its
principal (or User:*), host (or *) and operation (or ALL; READ, WRITE, DELETE
and ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS) matches the
resource, a literal name, * or a prefix, and no DENY does. A cluster with no
binding at all is open to everyone; once it has one, a resource no binding
matches is denied to all but the super users (Kafka's default), unless the
nodes run with --allow-everyone-if-no-acl-found.`,
	}
	cmd.AddCommand(newACLAddCmd(g), newACLListCmd(g), newACLDeleteCmd(g)) // acl_NAME.go
	return cmd
}

// aclResourceFlags are the resource flags of every acl command: at most
// one of --topic, --group, --transactional-id, --cluster.
type aclResourceFlags struct {
	topic, group, txn string
	cluster           bool
	pattern           string
}

func (r *aclResourceFlags) register(fs *pflag.FlagSet, patternHelp string) {
	fs.StringVar(&r.topic, "topic", "", "the topic (or topic name prefix, with --pattern prefixed)")
	fs.StringVar(&r.group, "group", "", "the consumer group (or prefix)")
	fs.StringVar(&r.txn, "transactional-id", "", "the transactional id (or prefix)")
	fs.BoolVar(&r.cluster, "cluster", false, "the cluster")
	fs.StringVar(&r.pattern, "pattern", "", patternHelp)
}

// resource returns the resource type and name given, "" for none.
func (r *aclResourceFlags) resource() (typ, name string, err error) {
	n := 0
	for _, set := range []bool{r.topic != "", r.group != "", r.txn != "", r.cluster} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return "", "", fmt.Errorf("give one of --topic, --group, --transactional-id and --cluster")
	case r.topic != "":
		return "topic", r.topic, nil
	case r.group != "":
		return "group", r.group, nil
	case r.txn != "":
		return "transactional-id", r.txn, nil
	case r.cluster:
		return "cluster", "kafka-cluster", nil
	}
	return "", "", nil
}

// aclFilterFlags are list's and delete's selection.
type aclFilterFlags struct {
	res                                    aclResourceFlags
	principal, host, operation, permission string
}

func (f *aclFilterFlags) register(fs *pflag.FlagSet) {
	f.res.register(fs, "literal, prefixed, match (every binding that applies to the resource named) or any (default: any)")
	fs.StringVar(&f.principal, "principal", "", "only this principal's bindings (User:alice)")
	fs.StringVar(&f.host, "host", "", "only bindings for this host")
	fs.StringVar(&f.operation, "operation", "", "only bindings of this operation")
	fs.StringVar(&f.permission, "permission", "", "only allow or deny bindings")
}

func (f *aclFilterFlags) filter() (client.ACLFilter, bool, error) {
	typ, name, err := f.res.resource()
	if err != nil {
		return client.ACLFilter{}, false, err
	}
	out := client.ACLFilter{ResourceType: typ, Pattern: f.res.pattern, Operation: f.operation, Permission: f.permission}
	if name != "" {
		out.Resource = &name
	}
	if f.principal != "" {
		out.Principal = &f.principal
	}
	if f.host != "" {
		out.Host = &f.host
	}
	if out.Pattern == "" {
		out.Pattern = "any"
	}
	narrowed := typ != "" || f.principal != "" || f.host != "" || f.operation != "" || f.permission != ""
	return out, narrowed, nil
}
