package sasl

// The SASL settings and the node-local credential store they fill: a file
// of SCRAM credentials (salted and hashed, never passwords) and a bootstrap
// user whose password is hashed at start and then forgotten. The cluster's
// users (AlterUserScramCredentials, spread by the catalog) lie beneath
// them (users.go).

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// Config configures authentication on SASL_PLAINTEXT and SASL_SSL
// listeners (node.Config.SASL).
type Config struct {
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

// DefaultConfig offers both SCRAM mechanisms, no PLAIN, and sessions
// that do not end.
func DefaultConfig() Config {
	return Config{Mechanisms: []string{ScramSHA256, ScramSHA512}}
}

// Validate refuses unknown mechanisms, a negative lifetime and a
// bootstrap user without a password.
func (c *Config) Validate() error {
	for _, m := range c.Mechanisms {
		if m != Plain && !IsScram(m) {
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

// Offers reports whether mechanism is enabled.
func (c *Config) Offers(mechanism string) bool { return slices.Contains(c.Mechanisms, mechanism) }

// LoadCredentials builds the node's own store: the file's credentials,
// then the bootstrap user's.
func (c *Config) LoadCredentials() (*Store, error) {
	store := NewStore()
	if c.CredentialsFile != "" {
		f, err := os.Open(c.CredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("SASL credentials: %w", err)
		}
		defer f.Close()
		creds, err := ParseCredentials(f)
		if err != nil {
			return nil, fmt.Errorf("SASL credentials %s: %w", c.CredentialsFile, err)
		}
		for _, uc := range creds {
			store.Set(uc.User, uc.ScramCredential)
		}
	}
	if c.BootstrapUser != "" {
		for _, m := range []string{ScramSHA256, ScramSHA512} {
			cred, err := NewScramCredential(m, c.BootstrapPassword, MinIteration)
			if err != nil {
				return nil, fmt.Errorf("SASL bootstrap user: %w", err)
			}
			store.Set(c.BootstrapUser, cred)
		}
	}
	return store, nil
}

// KeepBootstrapUser copies the bootstrap user's credentials from old into
// a reloaded store: its password is gone, so they cannot be made again.
func (c *Config) KeepBootstrapUser(old, reloaded *Store) {
	if c.BootstrapUser == "" {
		return
	}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		if cred, ok := old.Lookup(c.BootstrapUser, m); ok {
			reloaded.Set(c.BootstrapUser, cred)
		}
	}
}
