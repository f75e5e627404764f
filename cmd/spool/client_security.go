package main

// The client commands' TLS and SASL flags, for nodes whose listeners are
// SSL, SASL_PLAINTEXT or SASL_SSL (and an admin API served over https://).
// The password comes from a file or SPOOL_SASL_PASSWORD, never a flag.
// The admin API's bearer token, for nodes that require one, comes from
// --admin-token-file, else --admin-token or SPOOL_ADMIN_TOKEN.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// clientSecurityFlags are the flags before they become client.Config's
// TLS and SASL.
type clientSecurityFlags struct {
	tls              bool
	caFile           string
	certFile         string
	keyFile          string
	saslMechanism    string
	saslUser         string
	saslPasswordFile string
	adminToken       string
	adminTokenFile   string
}

// saslPasswordEnv holds the client's SASL password when no file is given.
const saslPasswordEnv = "SPOOL_SASL_PASSWORD"

// clientSecurityFlagNames are the flags, for clientOnlyFlags.
// --admin-token-file is not among them: `spool node` has its own, the
// token it requires.
var clientSecurityFlagNames = []string{"tls", "tls-ca-file", "client-cert-file", "client-key-file", "sasl-mechanism", "sasl-user", "sasl-password-file", "admin-token"}

func addClientSecurityFlags(fs *pflag.FlagSet, s *clientSecurityFlags) {
	fs.BoolVar(&s.tls, "tls", false, "connect to the brokers with TLS, trusting the system's roots unless --tls-ca-file (SPOOL_TLS)")
	fs.StringVar(&s.caFile, "tls-ca-file", "", "PEM CAs the nodes' certificates chain to, for --tls and an https:// --admin (SPOOL_TLS_CA_FILE)")
	fs.StringVar(&s.certFile, "client-cert-file", "", "PEM client certificate for nodes that require one (mTLS), for --tls and an https:// --admin (SPOOL_CLIENT_CERT_FILE)")
	fs.StringVar(&s.keyFile, "client-key-file", "", "PEM key of --client-cert-file (SPOOL_CLIENT_KEY_FILE)")
	fs.StringVar(&s.saslMechanism, "sasl-mechanism", "", "authenticate with SASL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SPOOL_SASL_MECHANISM)")
	fs.StringVar(&s.saslUser, "sasl-user", "", "SASL user name (SPOOL_SASL_USER)")
	fs.StringVar(&s.saslPasswordFile, "sasl-password-file", "", "file holding the SASL password; else "+saslPasswordEnv+" (SPOOL_SASL_PASSWORD_FILE)")
	fs.StringVar(&s.adminTokenFile, "admin-token-file", "", "file holding the bearer token of nodes' admin APIs (their --admin-token-file), for decommission, quarantine purge, scrub; else --admin-token (SPOOL_ADMIN_TOKEN_FILE)")
	fs.StringVar(&s.adminToken, "admin-token", "", "the admin API's bearer token; a flag's value shows in ps, so prefer SPOOL_ADMIN_TOKEN or --admin-token-file (SPOOL_ADMIN_TOKEN)")
}

// apply sets g's TLS and SASL from the flags: the CA and client
// certificate serve both the brokers (with --tls) and an https:// admin API.
func (s *clientSecurityFlags) apply(g *globals) error {
	if s.caFile != "" || s.certFile != "" || s.keyFile != "" || s.tls {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if s.caFile != "" {
			pem, err := os.ReadFile(s.caFile)
			if err != nil {
				return fmt.Errorf("--tls-ca-file: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("--tls-ca-file %s holds no PEM certificate", s.caFile)
			}
		}
		if s.certFile != "" || s.keyFile != "" {
			cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
			if err != nil {
				return fmt.Errorf("--client-cert-file/--client-key-file: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		g.AdminTLS = cfg
		if s.tls {
			g.TLS = cfg
		}
	}
	g.AdminToken = strings.TrimSpace(s.adminToken)
	if s.adminTokenFile != "" {
		raw, err := os.ReadFile(s.adminTokenFile)
		if err != nil {
			return fmt.Errorf("--admin-token-file: %w", err)
		}
		if g.AdminToken = strings.TrimSpace(string(raw)); g.AdminToken == "" {
			return fmt.Errorf("--admin-token-file %s is empty", s.adminTokenFile)
		}
	}
	if s.saslMechanism == "" {
		if s.saslUser != "" {
			return fmt.Errorf("--sasl-user needs --sasl-mechanism")
		}
		return nil
	}
	password := os.Getenv(saslPasswordEnv)
	if s.saslPasswordFile != "" {
		raw, err := os.ReadFile(s.saslPasswordFile)
		if err != nil {
			return fmt.Errorf("--sasl-password-file: %w", err)
		}
		password = strings.TrimRight(string(raw), "\r\n")
	}
	if s.saslUser == "" || password == "" {
		return fmt.Errorf("--sasl-mechanism %s needs --sasl-user and a password (--sasl-password-file or %s)", s.saslMechanism, saslPasswordEnv)
	}
	switch strings.ToUpper(s.saslMechanism) {
	case "PLAIN":
		g.SASL = plain.Auth{User: s.saslUser, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		g.SASL = scram.Auth{User: s.saslUser, Pass: password}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		g.SASL = scram.Auth{User: s.saslUser, Pass: password}.AsSha512Mechanism()
	default:
		return fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.saslMechanism)
	}
	return nil
}
