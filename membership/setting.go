package membership

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Cluster settings: named values every node holds alike (rebalancing
// paused, for now), one keyed entry set of the catalog like the users and
// ACLs, so they are saved with the catalog, spread by a user event and
// repaired by anti-entropy.

// SettingRebalancePaused is "true" while moves are paused (node/moves: pause.go).
const SettingRebalancePaused = "rebalance.paused"

// MaxSettingValue bounds a setting's value in bytes.
const MaxSettingValue = 256

// ErrInvalidSetting refuses a setting with a bad name or value.
var ErrInvalidSetting = errors.New("invalid cluster setting")

var settingName = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,63}$`)

// SettingEntry is one setting with its version: the higher (Lamport,
// Origin) wins, so two nodes setting it at once agree on the outcome.
type SettingEntry struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Lamport uint64 `json:"lamport"`
	Origin  int32  `json:"origin"`
}

func (e SettingEntry) key() string              { return e.Name }
func (e SettingEntry) lamport() uint64          { return e.Lamport }
func (e SettingEntry) clone() SettingEntry      { return e }
func (e SettingEntry) less(o SettingEntry) bool { return e.Name < o.Name }

func (e SettingEntry) newerThan(o SettingEntry) bool {
	if e.Lamport != o.Lamport {
		return e.Lamport > o.Lamport
	}
	if e.Origin != o.Origin {
		return e.Origin > o.Origin
	}
	return strings.Compare(e.Value, o.Value) > 0
}

func (e SettingEntry) validate() error {
	if !settingName.MatchString(e.Name) {
		return fmt.Errorf("%w: name %q", ErrInvalidSetting, e.Name)
	}
	if len(e.Value) > MaxSettingValue {
		return fmt.Errorf("%w: %s: %d bytes, at most %d", ErrInvalidSetting, e.Name, len(e.Value), MaxSettingValue)
	}
	return nil
}
