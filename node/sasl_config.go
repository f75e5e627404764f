package node

// The SASL settings and the node-local credential store they fill: a file
// of SCRAM credentials (salted and hashed, never passwords) and a bootstrap
// user whose password is hashed at start and then forgotten. Credentials
// are per node: the cluster-wide management of Kafka's
// AlterUserScramCredentials is not built yet, so every node must be given
// the same file.

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spool-log/spool/node/sasl"
)

// SASLConfig configures authentication on SASL_PLAINTEXT and SASL_SSL
// listeners.
type SASLConfig struct {
	// Mechanisms are the mechanisms offered in SaslHandshake: any of PLAIN,
	// SCRAM-SHA-256, SCRAM-SHA-512. PLAIN sends the password itself, so
	// offer it on SASL_SSL listeners only.
	Mechanisms []string
	// CredentialsFile holds SCRAM credentials, one per line as
	// `spool user hash` prints them (user, mechanism, iterations, salt,
	// StoredKey, ServerKey); PLAIN checks passwords against them. Read at
	// start and again on Reload (SIGHUP).
	CredentialsFile string
	// BootstrapUser, when set, gets SCRAM-SHA-256 and SCRAM-SHA-512
	// credentials made at start from BootstrapPassword, which is then
	// dropped from memory's config copy. It should come from a file or
	// the environment, never a command line.
	BootstrapUser     string
	BootstrapPassword string
	// SessionLifetime is how long an authentication lasts (Kafka's
	// connections.max.reauth.ms, KIP-368): clients are told it in
	// SaslAuthenticate v1+ and must re-authenticate on the same
	// connection before it ends; a connection whose session has ended is
	// closed at its next request other than re-authentication. Zero means
	// sessions do not end.
	SessionLifetime time.Duration
}

// DefaultSASLConfig offers both SCRAM mechanisms, no PLAIN, and sessions
// that do not end.
func DefaultSASLConfig() SASLConfig {
	return SASLConfig{Mechanisms: []string{sasl.ScramSHA256, sasl.ScramSHA512}}
}

func (c *SASLConfig) validate() error {
	for _, m := range c.Mechanisms {
		if m != sasl.Plain && !sasl.IsScram(m) {
			return fmt.Errorf("SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", m)
		}
	}
	if c.SessionLifetime < 0 {
		return fmt.Errorf("SASL session lifetime %v is negative", c.SessionLifetime)
	}
	if c.BootstrapUser != "" && c.BootstrapPassword == "" {
		return fmt.Errorf("SASL bootstrap user %q has no password", c.BootstrapUser)
	}
	return nil
}

// offers reports whether mechanism is enabled.
func (c *SASLConfig) offers(mechanism string) bool { return slices.Contains(c.Mechanisms, mechanism) }

// loadCredentials builds the store: the file's credentials, then the
// bootstrap user's.
func (c *SASLConfig) loadCredentials() (*sasl.Store, error) {
	store := sasl.NewStore()
	if c.CredentialsFile != "" {
		f, err := os.Open(c.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("SASL credentials: %w", err)
		}
		defer f.Close()
		creds, err := sasl.ParseCredentials(f)
		if err != nil {
			return nil, fmt.Errorf("SASL credentials %s: %w", c.CredentialsFile, err)
		}
		for _, uc := range creds {
			store.Set(uc.User, uc.ScramCredential)
		}
	}
	if c.BootstrapUser != "" {
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			cred, err := sasl.NewScramCredential(m, c.BootstrapPassword, sasl.MinIteration)
			if err != nil {
				return nil, fmt.Errorf("SASL bootstrap user: %w", err)
			}
			store.Set(c.BootstrapUser, cred)
		}
	}
	return store, nil
}

// usesSASL reports whether any listener authenticates with SASL.
func (c *Config) usesSASL() bool {
	for _, l := range c.kafkaListeners() {
		if l.Protocol.SASL() {
			return true
		}
	}
	return false
}
