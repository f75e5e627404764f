package node

// The node's access control is node/access's Guard (n.access): the Kafka
// listeners and connections, the SASL gate and store, the authorizer
// every handler asks, the request path's client quotas, and the TLS,
// admin token and SASL material. This file builds it from the config and
// hands it the catalog; the config's types of listeners and SASL are
// node/access's and node/sasl's, named here as the node's API has them.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/access"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/wire"
)

type (
	SecurityProtocol = access.SecurityProtocol
	Listener         = access.Listener
	SASLConfig       = sasl.Config
)

const (
	Plaintext     = access.Plaintext
	SSL           = access.SSL
	SASLPlaintext = access.SASLPlaintext
	SASLSSL       = access.SASLSSL
)

// ParseSecurityProtocol reads a protocol name, in any case.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	return access.ParseSecurityProtocol(s)
}

// DefaultSASLConfig offers both SCRAM mechanisms, no PLAIN, and sessions
// that do not end.
func DefaultSASLConfig() SASLConfig { return sasl.DefaultConfig() }

// kafkaListeners are the configured listeners, the main one first.
func (c *Config) kafkaListeners() []Listener {
	main := Listener{Name: c.KafkaListenerName, Addr: c.KafkaAddr, AdvertisedAddr: c.AdvertisedKafkaAddr, Protocol: c.KafkaProtocol}
	return access.ListenersOf(main, c.Listeners)
}

func (c *Config) validateListeners() error {
	return access.ValidateListeners(c.kafkaListeners(), c.TLS, c.SASL)
}

// newAccess loads the TLS files, the admin token and the SASL
// credentials, and makes the clients of the peers' admin APIs.
func (n *Node) newAccess() error {
	c := n.cfg
	g, err := access.New(access.Config{
		Listeners: c.kafkaListeners(), TLS: c.TLS, AdminTLS: c.AdminTLS, RaftTLS: c.RaftTLS,
		AdminTLSPeerCAFile: c.AdminTLSPeerCAFile, AdminTokenFile: c.AdminTokenFile, AdminTokenForReads: c.AdminTokenForReads,
		AdminAddr: c.AdminAddr, TLSReloadInterval: c.TLSReloadInterval, SASL: c.SASL,
		Authz:     authz.Config{SuperUsers: c.SuperUsers, AllowIfNoACL: c.AllowEveryoneIfNoACL},
		AuthzHook: c.authzHook, Quota: c.Quota, Log: n.log,
	}, access.Deps{Waits: requestWaits, ServerStats: func() (wire.Stats, bool) {
		if n.server == nil {
			return wire.Stats{}, false
		}
		return n.server.Stats(), true
	}})
	if err != nil {
		return err
	}
	n.access, n.peerFetchFunc, n.peers = g, g.PeerFetch(), g.Peers()
	// The password has been hashed; the config keeps no copy of it.
	n.cfg.SASL.BootstrapPassword = ""
	return nil
}

// Reload reads the TLS files, the admin token file and the SASL
// credentials file again. What cannot be loaded is reported and the
// previous material kept.
func (n *Node) Reload() error { return n.access.Reload() }

// ListenerAddrs maps each Kafka listener's name to its bound address
// (after Start).
func (n *Node) ListenerAddrs() map[string]string { return n.access.ListenerAddrs() }

// groupCoordinatorAs is groupCoordinatorFor behind Kafka's group rule:
// op on the group, else GROUP_AUTHORIZATION_FAILED, asked first.
func (n *Node) groupCoordinatorAs(who authz.Requester, op kmsg.ACLOperation, groupID string) (*group.Coordinator, int16) {
	if !who.MayGroup(op, groupID) {
		return nil, kerr.GroupAuthorizationFailed.Code
	}
	return n.coords.Groups.For(groupID)
}
