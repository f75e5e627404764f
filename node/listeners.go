package node

// Kafka listeners, as Kafka's `listeners` and `advertised.listeners`: each
// has a name, a security protocol and an address clients are told to use.
// The main listener is Config.KafkaAddr (its name and protocol
// Config.KafkaListenerName and Config.KafkaProtocol, PLAINTEXT by default);
// Config.Listeners adds more. Every listener's advertised address is
// gossiped in an "l.<NAME>" tag, so that Metadata, FindCoordinator and
// DescribeCluster answer a client with every broker's address on the
// listener the client came in on (a client inside the network gets the
// inside addresses, one outside the outside ones).

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/spool-log/spool/wire"
)

// SecurityProtocol is a listener's security protocol, named as Kafka names
// them.
type SecurityProtocol string

const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// ParseSecurityProtocol reads a protocol name, in any case.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	switch p := SecurityProtocol(strings.ToUpper(strings.TrimSpace(s))); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s)
}

// TLS reports whether connections are TLS (SSL, SASL_SSL).
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether clients must authenticate with SASL first.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// Listener is one Kafka listener.
type Listener struct {
	// Name identifies the listener across the cluster: a client that came
	// in on listener NAME is told every broker's NAME address. Letters,
	// digits, '_' and '-', at most 32.
	Name string
	// Addr is the host:port it binds; port 0 picks a free one.
	Addr string
	// AdvertisedAddr is the host:port clients are told; empty means the
	// bound address.
	AdvertisedAddr string
	// Protocol is its security protocol; empty means PLAINTEXT.
	Protocol SecurityProtocol
	// NoClientCerts makes an SSL or SASL_SSL listener ask for no client
	// certificate even when Config.TLS names a client CA bundle (Kafka's
	// listener.name.NAME.ssl.client.auth=none): its clients authenticate
	// with SASL, or not at all. Otherwise, with a client CA, every TLS
	// listener requires a certificate from it.
	NoClientCerts bool
}

var listenerNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// kafkaListeners are the configured listeners, the main one first.
func (c *Config) kafkaListeners() []Listener {
	proto := c.KafkaProtocol
	if proto == "" {
		proto = Plaintext
	}
	name := c.KafkaListenerName
	if name == "" {
		name = string(proto)
	}
	out := []Listener{{Name: name, Addr: c.KafkaAddr, AdvertisedAddr: c.AdvertisedKafkaAddr, Protocol: proto}}
	for _, l := range c.Listeners {
		if l.Protocol == "" {
			l.Protocol = Plaintext
		}
		out = append(out, l)
	}
	return out
}

// validateListeners refuses listeners that cannot be served: duplicate or
// bad names, unknown protocols, TLS without certificates, SASL without a
// mechanism.
func (c *Config) validateListeners() error {
	seen := map[string]bool{}
	for _, l := range c.kafkaListeners() {
		if !listenerNameRE.MatchString(l.Name) {
			return fmt.Errorf("listener name %q: want 1-32 letters, digits, '_' or '-'", l.Name)
		}
		if seen[l.Name] {
			return fmt.Errorf("listener name %q given twice", l.Name)
		}
		seen[l.Name] = true
		if l.Addr == "" {
			return fmt.Errorf("listener %s: no address", l.Name)
		}
		if _, err := ParseSecurityProtocol(string(l.Protocol)); err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
		if l.Protocol.TLS() && !c.TLS.Enabled() {
			return fmt.Errorf("listener %s is %s but no TLS certificate and key are configured", l.Name, l.Protocol)
		}
		if l.NoClientCerts && !l.Protocol.TLS() {
			return fmt.Errorf("listener %s is %s: no TLS, so no client certificates to turn off", l.Name, l.Protocol)
		}
		if l.Protocol.SASL() && len(c.SASL.Mechanisms) == 0 {
			return fmt.Errorf("listener %s is %s but no SASL mechanism is enabled", l.Name, l.Protocol)
		}
	}
	return c.TLS.Validate()
}

// kafkaListener is a bound listener.
type kafkaListener struct {
	Listener
	ln net.Listener
}

// advertised is the address clients of this listener are told.
func (l *kafkaListener) advertised() string {
	if l.AdvertisedAddr != "" {
		return l.AdvertisedAddr
	}
	return l.ln.Addr().String()
}

// bindListeners binds every listener, or none.
func (n *Node) bindListeners() error {
	for _, l := range n.cfg.kafkaListeners() {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			n.closeListeners()
			return fmt.Errorf("listen for kafka listener %s on %s: %w", l.Name, l.Addr, err)
		}
		n.listeners = append(n.listeners, &kafkaListener{Listener: l, ln: ln})
	}
	return nil
}

func (n *Node) closeListeners() {
	for _, l := range n.listeners {
		l.ln.Close()
	}
}

// advertisedListeners maps every listener's name to its advertised
// address, for the "l.<NAME>" gossip tags.
func (n *Node) advertisedListeners() map[string]string {
	out := make(map[string]string, len(n.listeners))
	for _, l := range n.listeners {
		out[l.Name] = l.advertised()
	}
	return out
}

// listenerOptions are wire's options for l: TLS for SSL and SASL_SSL,
// every connection's state (connState) in its context, and the per-ip
// connection quota.
func (n *Node) listenerOptions(l *kafkaListener) wire.ListenerOptions {
	opts := wire.ListenerOptions{
		ConnContext: func(ctx context.Context, nc net.Conn) context.Context {
			return withConnState(ctx, newConnState(l, nc))
		},
		Admit: n.admitConnection, // quota_enforce.go
	}
	switch {
	case l.Protocol.TLS() && l.NoClientCerts:
		opts.TLS = n.kafkaTLS.ServerConfigWithoutClientCerts()
	case l.Protocol.TLS():
		opts.TLS = n.kafkaTLS.ServerConfig()
	}
	if l.Protocol.SASL() {
		opts.RequestLimit = unauthenticatedRequestLimit
	}
	return opts
}

// ListenerAddrs maps each Kafka listener's name to its bound address
// (after Start).
func (n *Node) ListenerAddrs() map[string]string {
	out := make(map[string]string, len(n.listeners))
	for _, l := range n.listeners {
		out[l.Name] = l.ln.Addr().String()
	}
	return out
}

// brokersFor lists the live brokers with their addresses on the listener
// the request came in on.
func (n *Node) brokersFor(ctx context.Context) []Broker {
	return n.cluster.BrokersOn(n.listenerNameOf(ctx))
}

// listenerNameOf is the name of the listener a request came in on; the
// main listener's when the context carries none (tests calling handlers
// directly).
func (n *Node) listenerNameOf(ctx context.Context) string {
	if cs := connStateOf(ctx); cs != nil && cs.listener != nil {
		return cs.listener.Name
	}
	if len(n.listeners) > 0 {
		return n.listeners[0].Name
	}
	return n.cfg.kafkaListeners()[0].Name
}

// advertisedListenersConfig is Kafka's advertised.listeners value:
// NAME://host:port, comma-separated, the main listener first.
func (n *Node) advertisedListenersConfig() string {
	if len(n.listeners) == 0 {
		return "PLAINTEXT://" + n.AdvertisedKafkaAddr()
	}
	parts := make([]string, len(n.listeners))
	for i, l := range n.listeners {
		parts[i] = l.Name + "://" + l.advertised()
	}
	return strings.Join(parts, ",")
}
