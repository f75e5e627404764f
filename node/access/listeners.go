package access

// Kafka listeners, as Kafka's `listeners` and `advertised.listeners`: each
// has a name, a security protocol and an address clients are told to use.
// The main listener is node.Config.KafkaAddr (its name and protocol
// KafkaListenerName and KafkaProtocol, PLAINTEXT by default);
// node.Config.Listeners adds more. Every listener's advertised address is
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

	"github.com/spool-log/spool/node/sasl"
	"github.com/spool-log/spool/node/tlsfiles"
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
	// certificate even when node.Config.TLS names a client CA bundle
	// (Kafka's listener.name.NAME.ssl.client.auth=none): its clients
	// authenticate with SASL, or not at all. Otherwise, with a client CA,
	// every TLS listener requires a certificate from it.
	NoClientCerts bool
}

var listenerNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ListenersOf are the configured listeners, the main one first: main with
// its name and protocol defaulted, then more, each PLAINTEXT unless told.
func ListenersOf(main Listener, more []Listener) []Listener {
	if main.Protocol == "" {
		main.Protocol = Plaintext
	}
	if main.Name == "" {
		main.Name = string(main.Protocol)
	}
	out := []Listener{main}
	for _, l := range more {
		if l.Protocol == "" {
			l.Protocol = Plaintext
		}
		out = append(out, l)
	}
	return out
}

// ValidateListeners refuses listeners that cannot be served: duplicate or
// bad names, unknown protocols, TLS without certificates, SASL without a
// mechanism.
func ValidateListeners(ls []Listener, tls tlsfiles.Files, sasl sasl.Config) error {
	seen := map[string]bool{}
	for _, l := range ls {
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
		if l.Protocol.TLS() && !tls.Enabled() {
			return fmt.Errorf("listener %s is %s but no TLS certificate and key are configured", l.Name, l.Protocol)
		}
		if l.NoClientCerts && !l.Protocol.TLS() {
			return fmt.Errorf("listener %s is %s: no TLS, so no client certificates to turn off", l.Name, l.Protocol)
		}
		if l.Protocol.SASL() && len(sasl.Mechanisms) == 0 {
			return fmt.Errorf("listener %s is %s but no SASL mechanism is enabled", l.Name, l.Protocol)
		}
	}
	return tls.Validate()
}

// usesSASL reports whether any listener authenticates with SASL.
func usesSASL(ls []Listener) bool {
	for _, l := range ls {
		if l.Protocol.SASL() {
			return true
		}
	}
	return false
}

// Bound is a bound listener.
type Bound struct {
	Listener
	// Net is the socket, which the node's wire server serves.
	Net net.Listener
}

// advertised is the address clients of this listener are told.
func (l *Bound) advertised() string {
	if l.AdvertisedAddr != "" {
		return l.AdvertisedAddr
	}
	return l.Net.Addr().String()
}

// BindListeners binds every listener, or none.
func (g *Guard) BindListeners() error {
	for _, l := range g.cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			g.CloseListeners()
			return fmt.Errorf("listen for kafka listener %s on %s: %w", l.Name, l.Addr, err)
		}
		g.bound = append(g.bound, &Bound{Listener: l, Net: ln})
	}
	return nil
}

// CloseListeners closes every bound listener.
func (g *Guard) CloseListeners() {
	for _, l := range g.bound {
		l.Net.Close()
	}
}

// Listeners are the bound listeners, the main one first (after
// BindListeners).
func (g *Guard) Listeners() []*Bound { return g.bound }

// AdvertisedListeners maps every listener's name to its advertised
// address, for the "l.<NAME>" gossip tags.
func (g *Guard) AdvertisedListeners() map[string]string {
	out := make(map[string]string, len(g.bound))
	for _, l := range g.bound {
		out[l.Name] = l.advertised()
	}
	return out
}

// ListenerAddrs maps each listener's name to its bound address.
func (g *Guard) ListenerAddrs() map[string]string {
	out := make(map[string]string, len(g.bound))
	for _, l := range g.bound {
		out[l.Name] = l.Net.Addr().String()
	}
	return out
}

// ListenerOptions are wire's options for l: TLS for SSL and SASL_SSL,
// every connection's state (Conn) in its context, and the per-ip
// connection quota.
func (g *Guard) ListenerOptions(l *Bound) wire.ListenerOptions {
	opts := wire.ListenerOptions{
		ConnContext: func(ctx context.Context, nc net.Conn) context.Context {
			return withConn(ctx, newConn(l, nc))
		},
		Admit: g.admitConnection, // quotas.go
	}
	switch {
	case l.Protocol.TLS() && l.NoClientCerts:
		opts.TLS = g.kafkaTLS.ServerConfigWithoutClientCerts()
	case l.Protocol.TLS():
		opts.TLS = g.kafkaTLS.ServerConfig()
	}
	if l.Protocol.SASL() {
		opts.RequestLimit = unauthenticatedRequestLimit
	}
	return opts
}

// ListenerName is the name of the listener a request came in on; the
// main listener's when the context carries none (tests calling handlers
// directly).
func (g *Guard) ListenerName(ctx context.Context) string {
	if c := ConnOf(ctx); c != nil && c.listener != nil {
		return c.listener.Name
	}
	if len(g.bound) > 0 {
		return g.bound[0].Name
	}
	return g.cfg.Listeners[0].Name
}

// AdvertisedListenersConfig is Kafka's advertised.listeners value:
// NAME://host:port, comma-separated, the main listener first; before
// the listeners are bound, PLAINTEXT://fallback.
func (g *Guard) AdvertisedListenersConfig(fallback string) string {
	if len(g.bound) == 0 {
		return "PLAINTEXT://" + fallback
	}
	parts := make([]string, len(g.bound))
	for i, l := range g.bound {
		parts[i] = l.Name + "://" + l.advertised()
	}
	return strings.Join(parts, ",")
}
