package membership

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hashicorp/memberlist"

	"github.com/spool-log/spool/internal/atomicfile"
)

// DecodeGossipKey decodes a base64 gossip key as given on the command line
// and checks that it is 32 bytes (AES-256).
func DecodeGossipKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("gossip key: not base64: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("gossip key: %d bytes, want 32", len(key))
	}
	return key, nil
}

// buildKeyring is the keyring gossip uses: Config.Keyring when the caller
// built it (BuildKeyring), else one built from the config.
func buildKeyring(c *Config) (*memberlist.Keyring, error) {
	if c.Keyring != nil {
		return c.Keyring, nil
	}
	return BuildKeyring(c.GossipKey, c.KeyringFile)
}

// BuildKeyring assembles the memberlist keyring from the keys of the keyring
// file (Serf's format: a JSON array of base64 keys, the first the primary)
// and gossipKey, which becomes the primary. It returns nil when gossip is not
// encrypted. A keyring file that does not exist yet is written with
// gossipKey, so the key survives a restart without the flag. The node builds
// it before the agent, to share it with the Raft transport (Config.Keyring).
func BuildKeyring(gossipKey []byte, keyringFile string) (*memberlist.Keyring, error) {
	c := &Config{GossipKey: gossipKey, KeyringFile: keyringFile}
	var keys [][]byte
	if c.KeyringFile != "" {
		raw, err := os.ReadFile(c.KeyringFile)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("read keyring %s: %w", c.KeyringFile, err)
		default:
			var encoded []string
			if err := json.Unmarshal(raw, &encoded); err != nil {
				return nil, fmt.Errorf("parse keyring %s: %w", c.KeyringFile, err)
			}
			for i, s := range encoded {
				k, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return nil, fmt.Errorf("keyring %s key %d: %w", c.KeyringFile, i, err)
				}
				if err := memberlist.ValidateKey(k); err != nil {
					return nil, fmt.Errorf("keyring %s key %d: %w", c.KeyringFile, i, err)
				}
				keys = append(keys, k)
			}
		}
	}
	if len(c.GossipKey) == 0 && len(keys) == 0 {
		return nil, nil
	}
	primary := c.GossipKey
	if len(primary) == 0 {
		primary = keys[0]
	}
	ring, err := memberlist.NewKeyring(keys, primary)
	if err != nil {
		return nil, fmt.Errorf("build keyring: %w", err)
	}
	if c.KeyringFile != "" && len(c.GossipKey) != 0 {
		var encoded []string
		for _, k := range ring.GetKeys() {
			encoded = append(encoded, base64.StdEncoding.EncodeToString(k))
		}
		raw, err := json.Marshal(encoded)
		if err != nil {
			return nil, fmt.Errorf("encode keyring: %w", err)
		}
		if err := atomicfile.Write(c.KeyringFile, raw, 0o600); err != nil {
			return nil, fmt.Errorf("persist keyring: %w", err)
		}
	}
	return ring, nil
}
