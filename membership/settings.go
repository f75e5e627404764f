package membership

// The agent's cluster settings. Saving, spreading and repairing are every
// catalog set's (entry_kind.go).

import (
	"fmt"

	"github.com/sirupsen/logrus"
)

// eventSetting carries one SettingEntry, JSON: well under a few hundred bytes.
const eventSetting = "spool-setting"

func newSettingsKind() *entryKind[string, SettingEntry] {
	return &entryKind[string, SettingEntry]{what: "cluster setting", event: eventSetting,
		merge: (*Catalog).MergeSettings,
		fields: func(e SettingEntry) logrus.Fields {
			return logrus.Fields{"setting": e.Name, "value": e.Value, "origin": e.Origin}
		}}
}

// SetSetting sets name to value cluster-wide, saved before it is taken and
// spread. The error wraps ErrInvalidSetting or ErrNotDurable.
func (a *Agent) SetSetting(name, value string) error {
	a.opMu.Lock()
	defer a.opMu.Unlock()
	e := SettingEntry{Name: name, Value: value, Origin: a.cfg.BrokerID}
	if err := e.validate(); err != nil {
		return err
	}
	if cur, ok := a.catalog.setting(name); ok && cur.Value == value {
		return nil
	}
	e.Lamport = a.catalog.tick()
	if err := mergeEntries(a, a.settings, []SettingEntry{e}, "local"); err != nil {
		return fmt.Errorf("set %s: %w", name, err)
	}
	broadcastEntry(a, a.settings, e)
	return nil
}

// Setting is name's value, and false when it was never set.
func (a *Agent) Setting(name string) (string, bool) {
	e, ok := a.catalog.setting(name)
	return e.Value, ok
}

// RebalancePaused tells whether moves are paused cluster-wide.
func (a *Agent) RebalancePaused() bool {
	v, _ := a.Setting(SettingRebalancePaused)
	return v == "true"
}

// SetRebalancePaused pauses or resumes moves cluster-wide. A pause is
// refused (ErrMixedVersions) while a live node ignores settings: it would
// go on moving. A resume is not: it only lets such a node's peers move
// too.
func (a *Agent) SetRebalancePaused(paused bool) error {
	if paused {
		if err := a.RequireFeature(FeatureSettings); err != nil {
			return fmt.Errorf("pause rebalancing: %w", err)
		}
	}
	return a.SetSetting(SettingRebalancePaused, fmt.Sprint(paused))
}
