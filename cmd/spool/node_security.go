package main

// `spool node`'s security flags: Kafka listeners beyond --kafka-addr, TLS
// for them, for the admin API and for the Raft transport, the admin
// token, and SASL. Secrets (the bootstrap password, the admin token) come
// from a file or the environment, never from a flag value.

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/spool-log/spool/node"
)

// securityFlags are the flags before they become node.Config fields.
type securityFlags struct {
	kafkaProtocol         string
	listeners             []string
	advertisedListeners   []string
	noClientCerts         []string
	saslMechanisms        []string
	bootstrapPasswordFile string
	superUsers            string
}

// bootstrapPasswordEnv holds the SASL bootstrap user's password when no
// file is given; it is the one setting with no flag, so that the password
// never sits on a command line.
const bootstrapPasswordEnv = "SPOOL_SASL_BOOTSTRAP_PASSWORD"

func addSecurityFlags(fs *pflag.FlagSet, s *securityFlags, cfg *node.Config) {
	fs.StringVar(&cfg.KafkaListenerName, "kafka-listener-name", "", "name of the --kafka-addr listener, which Metadata uses to answer with each broker's address on the same listener; default its security protocol (SPOOL_KAFKA_LISTENER_NAME)")
	fs.StringVar(&s.kafkaProtocol, "kafka-security-protocol", string(node.Plaintext), "security protocol of the --kafka-addr listener: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (SPOOL_KAFKA_SECURITY_PROTOCOL)")
	fs.StringSliceVar(&s.listeners, "listener", nil, "another Kafka listener as NAME=PROTOCOL://host:port (PROTOCOL: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), repeatable (SPOOL_LISTENER, comma-separated)")
	fs.StringSliceVar(&s.noClientCerts, "listener-no-client-certs", nil, "names of SSL/SASL_SSL listeners that ask for no client certificate although --tls-client-ca-file is set (Kafka's ssl.client.auth=none), repeatable (SPOOL_LISTENER_NO_CLIENT_CERTS, comma-separated)")
	fs.StringSliceVar(&s.advertisedListeners, "advertise-listener", nil, "address clients of a --listener are told, as NAME=host:port; default its bound address, repeatable (SPOOL_ADVERTISE_LISTENER, comma-separated)")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert-file", "", "PEM certificate chain of the SSL and SASL_SSL listeners; re-read on SIGHUP and when it changes (SPOOL_TLS_CERT_FILE)")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key-file", "", "PEM private key of --tls-cert-file (SPOOL_TLS_KEY_FILE)")
	fs.StringVar(&cfg.TLS.ClientCAFile, "tls-client-ca-file", "", "PEM bundle of CAs client certificates must chain to; set, every TLS Kafka client must present one (mTLS) (SPOOL_TLS_CLIENT_CA_FILE)")
	fs.StringVar(&cfg.AdminTLS.CertFile, "admin-tls-cert-file", "", "PEM certificate chain of the admin API, which then serves HTTPS only; also presented to peers' admin APIs, so every node must use HTTPS (SPOOL_ADMIN_TLS_CERT_FILE)")
	fs.StringVar(&cfg.AdminTLS.KeyFile, "admin-tls-key-file", "", "PEM private key of --admin-tls-cert-file (SPOOL_ADMIN_TLS_KEY_FILE)")
	fs.StringVar(&cfg.AdminTLS.ClientCAFile, "admin-tls-client-ca-file", "", "PEM bundle of CAs admin API clients' certificates must chain to (mTLS, peers included) (SPOOL_ADMIN_TLS_CLIENT_CA_FILE)")
	fs.StringVar(&cfg.AdminTLSPeerCAFile, "admin-tls-peer-ca-file", "", "PEM bundle of CAs peers' admin certificates chain to; default --admin-tls-client-ca-file, else the system's roots (SPOOL_ADMIN_TLS_PEER_CA_FILE)")
	fs.StringVar(&cfg.RaftTLS.CertFile, "raft-tls-cert-file", "", "PEM certificate chain of the Raft replication transport, which then speaks mutual TLS only, presented both as server and as client (both key usages, names of the advertised Raft host); every node must use it; re-read on SIGHUP and when it changes (SPOOL_RAFT_TLS_CERT_FILE)")
	fs.StringVar(&cfg.RaftTLS.KeyFile, "raft-tls-key-file", "", "PEM private key of --raft-tls-cert-file (SPOOL_RAFT_TLS_KEY_FILE)")
	fs.StringVar(&cfg.RaftTLS.ClientCAFile, "raft-tls-ca-file", "", "PEM bundle of CAs peers' Raft certificates must chain to, both ways (SPOOL_RAFT_TLS_CA_FILE)")
	fs.StringVar(&cfg.AdminTokenFile, "admin-token-file", "", "file holding the bearer token admin API requests that change state (decommission, quarantine purge, scrub) must present, unless admin mTLS verified their certificate; presented to peers too, so every node needs the same; re-read on SIGHUP (SPOOL_ADMIN_TOKEN_FILE)")
	fs.BoolVar(&cfg.AdminTokenForReads, "admin-token-for-reads", false, "require the --admin-token-file token for the admin API's reads too (/healthz and /readyz stay open) (SPOOL_ADMIN_TOKEN_FOR_READS)")
	fs.DurationVar(&cfg.TLSReloadInterval, "tls-reload-interval", cfg.TLSReloadInterval, "how often the TLS files are checked for changes; 0 only on SIGHUP (SPOOL_TLS_RELOAD_INTERVAL)")
	fs.StringSliceVar(&s.saslMechanisms, "sasl-mechanisms", cfg.SASL.Mechanisms, "SASL mechanisms of SASL_* listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (SPOOL_SASL_MECHANISMS, comma-separated)")
	fs.StringVar(&cfg.SASL.CredentialsFile, "sasl-credentials-file", "", "file of SCRAM credentials, one per line as 'spool user hash' prints them; re-read on SIGHUP (SPOOL_SASL_CREDENTIALS_FILE)")
	fs.StringVar(&cfg.SASL.BootstrapUser, "sasl-bootstrap-user", "", "user given SCRAM-SHA-256/512 credentials at start from --sasl-bootstrap-password-file or "+bootstrapPasswordEnv+" (SPOOL_SASL_BOOTSTRAP_USER)")
	fs.StringVar(&s.bootstrapPasswordFile, "sasl-bootstrap-password-file", "", "file holding the bootstrap user's password; else "+bootstrapPasswordEnv+" (SPOOL_SASL_BOOTSTRAP_PASSWORD_FILE)")
	fs.StringVar(&s.superUsers, "super-users", "", "principals allowed every request whatever the ACLs say, separated by ; as Kafka's super.users (a certificate subject holds commas): User:NAME for a SASL user, User:CN=...,O=... for a client certificate's subject (SPOOL_SUPER_USERS)")
	fs.BoolVar(&cfg.AllowEveryoneIfNoACL, "allow-everyone-if-no-acl-found", cfg.AllowEveryoneIfNoACL, "once the cluster has ACLs, allow a request on a resource no ACL matches (Kafka's allow.everyone.if.no.acl.found); false: no matching ACL means deny, for everyone but --super-users. A cluster with no ACL at all serves everyone either way (SPOOL_ALLOW_EVERYONE_IF_NO_ACL_FOUND)")
	fs.DurationVar(&cfg.SASL.SessionLifetime, "sasl-session-lifetime", 0, "how long a SASL authentication lasts before the client must re-authenticate on its connection (connections.max.reauth.ms); 0 never (SPOOL_SASL_SESSION_LIFETIME)")
}

// apply puts the flags into cfg.
func (s *securityFlags) apply(cfg *node.Config) error {
	var err error
	cfg.SuperUsers = nil
	for _, p := range strings.Split(s.superUsers, ";") {
		if p = strings.TrimSpace(p); p != "" {
			cfg.SuperUsers = append(cfg.SuperUsers, p)
		}
	}
	if cfg.KafkaProtocol, err = node.ParseSecurityProtocol(s.kafkaProtocol); err != nil {
		return fmt.Errorf("--kafka-security-protocol: %w", err)
	}
	cfg.Listeners = nil
	byName := map[string]int{}
	for _, spec := range s.listeners {
		l, err := parseListener(spec)
		if err != nil {
			return fmt.Errorf("--listener %q: %w", spec, err)
		}
		byName[l.Name] = len(cfg.Listeners)
		cfg.Listeners = append(cfg.Listeners, l)
	}
	for _, spec := range s.advertisedListeners {
		name, addr, ok := strings.Cut(spec, "=")
		i, known := byName[name]
		if !ok || addr == "" {
			return fmt.Errorf("--advertise-listener %q: want NAME=host:port", spec)
		}
		if !known {
			return fmt.Errorf("--advertise-listener %q: no --listener is named %s", spec, name)
		}
		cfg.Listeners[i].AdvertisedAddr = addr
	}
	for _, name := range s.noClientCerts {
		i, known := byName[name]
		if !known {
			return fmt.Errorf("--listener-no-client-certs %s: no --listener is named %s", name, name)
		}
		cfg.Listeners[i].NoClientCerts = true
	}
	cfg.SASL.Mechanisms = nil
	for _, m := range s.saslMechanisms {
		if m = strings.ToUpper(strings.TrimSpace(m)); m != "" {
			cfg.SASL.Mechanisms = append(cfg.SASL.Mechanisms, m)
		}
	}
	if cfg.SASL.BootstrapUser != "" {
		switch {
		case s.bootstrapPasswordFile != "":
			raw, err := os.ReadFile(s.bootstrapPasswordFile)
			if err != nil {
				return fmt.Errorf("--sasl-bootstrap-password-file: %w", err)
			}
			cfg.SASL.BootstrapPassword = strings.TrimRight(string(raw), "\r\n")
		default:
			cfg.SASL.BootstrapPassword = os.Getenv(bootstrapPasswordEnv)
		}
		if cfg.SASL.BootstrapPassword == "" {
			return fmt.Errorf("--sasl-bootstrap-user %s: no password in --sasl-bootstrap-password-file or %s", cfg.SASL.BootstrapUser, bootstrapPasswordEnv)
		}
	}
	if cfg.TLSReloadInterval < 0 {
		return fmt.Errorf("--tls-reload-interval %v is negative", cfg.TLSReloadInterval)
	}
	return nil
}

// parseListener reads NAME=PROTOCOL://host:port.
func parseListener(spec string) (node.Listener, error) {
	name, rest, ok := strings.Cut(spec, "=")
	proto, addr, ok2 := strings.Cut(rest, "://")
	if !ok || !ok2 || name == "" || addr == "" {
		return node.Listener{}, fmt.Errorf("want NAME=PROTOCOL://host:port")
	}
	p, err := node.ParseSecurityProtocol(proto)
	if err != nil {
		return node.Listener{}, err
	}
	return node.Listener{Name: name, Addr: addr, Protocol: p}, nil
}
