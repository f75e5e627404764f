package share

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// settingsBroker is a Broker with cluster settings only.
type settingsBroker struct {
	Broker   // the rest panics: not used here
	settings map[string]string
}

func (b *settingsBroker) Setting(name string) (string, bool) {
	v, ok := b.settings[name]
	return v, ok
}

func (b *settingsBroker) SetSetting(name, value string) error {
	b.settings[name] = value
	return nil
}

// A group's configs are altered all or none, kept in the cluster
// settings, and described with their source.
func TestNodeGroupConfigs(t *testing.T) {
	b := &settingsBroker{settings: map[string]string{}}
	n := NewNode(b, nil, nil, "/share/", nil)
	set := func(name, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
		return c
	}
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceName = "g"
	rr.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{set(ConfigDeliveryCountLimit, "3"), set(ConfigRecordLockDuration, "not a number")}
	err := n.AlterConfigs(rr, false)
	if ce, ok := err.(*ConfigError); !ok || ce.Err != kerr.InvalidConfig || len(b.settings) != 0 {
		t.Fatalf("an invalid value: %v, settings %v", err, b.settings)
	}
	rr.Configs = rr.Configs[:1]
	if err := n.AlterConfigs(rr, true); err != nil || len(b.settings) != 0 {
		t.Fatalf("validate only: %v, settings %v", err, b.settings)
	}
	if err := n.AlterConfigs(rr, false); err != nil {
		t.Fatal(err)
	}
	got := map[string]kmsg.ConfigSource{}
	values := map[string]string{}
	code, _ := n.DescribeConfigs("g", func(name, value string, src kmsg.ConfigSource, _ kmsg.ConfigType, _ bool, _ ...string) {
		got[name], values[name] = src, value
	})
	if code != 0 || values[ConfigDeliveryCountLimit] != "3" || got[ConfigDeliveryCountLimit] != kmsg.ConfigSourceGroupConfig || got[ConfigRecordLockDuration] != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("described %v %v (code %d)", values, got, code)
	}
}
