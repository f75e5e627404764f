package share

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group configs (KIP-932's share.* names) for DescribeConfigs and
// IncrementalAlterConfigs on GROUP resources. They are kept as one cluster
// setting per group (SettingName), so every node — the group's coordinator
// and every partition leader — applies the same ones. The requester's
// right to them is the handler's to check.

// groupConfig is group's configs: the defaults with the overrides kept in
// the cluster settings.
func (n *Node) groupConfig(defaults GroupConfig, group string) GroupConfig {
	v, ok := n.b.Setting(SettingName(group))
	if !ok {
		return defaults
	}
	return DecodeOverrides(v).Apply(defaults)
}

func (n *Node) overrides(group string) Overrides {
	v, _ := n.b.Setting(SettingName(group))
	return DecodeOverrides(v)
}

// ConfigError is a refused config change: the Kafka error and a message
// for the client.
type ConfigError struct {
	Err *kerr.Error
	Msg string
}

func (e *ConfigError) Error() string { return e.Err.Message + ": " + e.Msg }

// DescribeConfigs lists group's configs through add, which filters by the
// names asked for.
func (n *Node) DescribeConfigs(group string, add func(name, value string, src kmsg.ConfigSource, typ kmsg.ConfigType, readOnly bool, def ...string)) (int16, *string) {
	if group == "" {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("a group config needs a group id")
	}
	_, parts := n.Get()
	over := n.overrides(group)
	cfg := parts.GroupConfig(group)
	for _, name := range ConfigNames {
		v, _ := cfg.Value(name)
		src := kmsg.ConfigSourceDefaultConfig
		if _, ok := over[name]; ok {
			src = kmsg.ConfigSourceGroupConfig
		}
		typ := kmsg.ConfigTypeString
		if name == ConfigRecordLockDuration || name == ConfigDeliveryCountLimit {
			typ = kmsg.ConfigTypeInt
		}
		add(name, v, src, typ, false)
	}
	return 0, nil
}

// AlterConfigs applies IncrementalAlterConfigs' SET and DELETE to group's
// configs, all or none; its errors are *ConfigError.
func (n *Node) AlterConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceName == "" {
		return &ConfigError{kerr.InvalidRequest, "a group config needs a group id"}
	}
	over := n.overrides(rr.ResourceName)
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return &ConfigError{kerr.InvalidRequest, fmt.Sprintf("config %q named twice", c.Name)}
		}
		seen[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if c.Value != nil {
				v = *c.Value
			}
			if err := Check(c.Name, v); err != nil {
				return &ConfigError{kerr.InvalidConfig, err.Error()}
			}
			over[c.Name] = v
		case kmsg.IncrementalAlterConfigOpDelete:
			if err := Check(c.Name, "x"); err != nil && !slices.Contains(ConfigNames, c.Name) {
				return &ConfigError{kerr.InvalidConfig, err.Error()}
			}
			delete(over, c.Name)
		default:
			return &ConfigError{kerr.InvalidRequest, "group configs are not lists: APPEND and SUBTRACT do not apply"}
		}
	}
	if validateOnly {
		return nil
	}
	if err := n.b.SetSetting(SettingName(rr.ResourceName), over.Encode()); err != nil {
		return &ConfigError{kerr.KafkaStorageError, err.Error()}
	}
	return nil
}
