package main

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spool-log/spool/client"
)

func newQuotaCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Manage the cluster's client quotas",
		Long: `set, list and delete manage the cluster's client quotas over the Kafka protocol
(AlterClientQuotas, DescribeClientQuotas), as Kafka's kafka-configs.sh does
with --entity-type users/clients/ips: a change made through any node reaches
every node by gossip, within seconds, and is kept on each node's disk. They
need ALTER_CONFIGS (set, delete) or DESCRIBE_CONFIGS (list) on the cluster.

An entity is a user (--user NAME, or --user-default for every user that has
no quota of its own), a client id (--client-id, --client-id-default), a user
and a client id together, or an ip (--ip, --ip-default). Keys:
producer_byte_rate and consumer_byte_rate (bytes per second, per node),
request_percentage and controller_mutation_rate for users and client ids;
connection_creation_rate for ips.

A client's quota is the first found of: user+client-id, user+default
client-id, user, default user+client-id, default user+default client-id,
default user, client-id, default client-id. Each default applies to every
user or client id on its own. A client over its byte rate gets its responses
with throttle_time_ms set, and its connection is not read for that long.`,
	}
	cmd.AddCommand(newQuotaSetCmd(g), newQuotaListCmd(g), newQuotaDeleteCmd(g)) // quota_NAME.go
	return cmd
}

// quotaEntityFlags are the entity flags of every quota command.
type quotaEntityFlags struct {
	user, clientID, ip                    string
	userDefault, clientDefault, ipDefault bool
}

func (f *quotaEntityFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.user, "user", "", "the user (a SASL user name, ANONYMOUS for clients that did not authenticate)")
	fs.BoolVar(&f.userDefault, "user-default", false, "the default user: every user without a quota of its own")
	fs.StringVar(&f.clientID, "client-id", "", "the client id")
	fs.BoolVar(&f.clientDefault, "client-id-default", false, "the default client id: every client id without a quota of its own")
	fs.StringVar(&f.ip, "ip", "", "the client IP address (connection_creation_rate)")
	fs.BoolVar(&f.ipDefault, "ip-default", false, "the default ip: every address without a quota of its own")
}

// entity is the entity the flags name; empty when none is given.
func (f *quotaEntityFlags) entity() (client.QuotaEntity, error) {
	var e client.QuotaEntity
	add := func(typ, name string, dflt bool, flag string) error {
		switch {
		case name != "" && dflt:
			return errors.New("give --" + flag + " or --" + flag + "-default, not both")
		case dflt:
			e = append(e, client.QuotaEntityPart{Type: typ})
		case name != "":
			n := name
			e = append(e, client.QuotaEntityPart{Type: typ, Name: &n})
		}
		return nil
	}
	if err := add("user", f.user, f.userDefault, "user"); err != nil {
		return nil, err
	}
	if err := add("client-id", f.clientID, f.clientDefault, "client-id"); err != nil {
		return nil, err
	}
	if err := add("ip", f.ip, f.ipDefault, "ip"); err != nil {
		return nil, err
	}
	return e, nil
}

// mustEntity is entity, refusing none.
func (f *quotaEntityFlags) mustEntity() (client.QuotaEntity, error) {
	e, err := f.entity()
	if err == nil && len(e) == 0 {
		err = errors.New("give the entity: --user, --client-id (or both), or --ip, each NAME or -default")
	}
	return e, err
}
