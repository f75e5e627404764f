package node

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/share"
)

// Group configs (KIP-932's share.* names) for DescribeConfigs and
// IncrementalAlterConfigs on GROUP resources. They are kept as one
// cluster setting per group (node/share: SettingName), so every node — the
// group's coordinator and every partition leader — applies the same ones.

// describeShareGroupConfigs lists group's configs through add, which
// filters by the names asked for.
func (n *Node) describeShareGroupConfigs(who authz.Requester, group string, add func(name, value string, src kmsg.ConfigSource, typ kmsg.ConfigType, readOnly bool, def ...string)) (int16, *string) {
	if !who.MayGroup(kmsg.ACLOperationDescribeConfigs, group) {
		return kerr.GroupAuthorizationFailed.Code, kmsg.StringPtr("DESCRIBE_CONFIGS on the group is needed")
	}
	if group == "" {
		return kerr.InvalidRequest.Code, kmsg.StringPtr("a group config needs a group id")
	}
	_, parts := n.shares()
	over := n.shareGroupOverrides(group)
	cfg := parts.GroupConfig(group)
	for _, name := range share.ConfigNames {
		v, _ := cfg.Value(name)
		src := kmsg.ConfigSourceDefaultConfig
		if _, ok := over[name]; ok {
			src = kmsg.ConfigSourceGroupConfig
		}
		typ := kmsg.ConfigTypeString
		if name == share.ConfigRecordLockDuration || name == share.ConfigDeliveryCountLimit {
			typ = kmsg.ConfigTypeInt
		}
		add(name, v, src, typ, false)
	}
	return 0, nil
}

// alterShareGroupConfigs applies IncrementalAlterConfigs' SET and DELETE
// to group's configs, all or none.
func (n *Node) alterShareGroupConfigs(who authz.Requester, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if !who.MayGroup(kmsg.ACLOperationAlterConfigs, rr.ResourceName) {
		return &topicError{kerr.GroupAuthorizationFailed, "ALTER_CONFIGS on the group is needed"}
	}
	if rr.ResourceName == "" {
		return &topicError{kerr.InvalidRequest, "a group config needs a group id"}
	}
	over := n.shareGroupOverrides(rr.ResourceName)
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return &topicError{kerr.InvalidRequest, fmt.Sprintf("config %q named twice", c.Name)}
		}
		seen[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if c.Value != nil {
				v = *c.Value
			}
			if err := share.Check(c.Name, v); err != nil {
				return &topicError{kerr.InvalidConfig, err.Error()}
			}
			over[c.Name] = v
		case kmsg.IncrementalAlterConfigOpDelete:
			if err := share.Check(c.Name, "x"); err != nil && !knownShareConfig(c.Name) {
				return &topicError{kerr.InvalidConfig, err.Error()}
			}
			delete(over, c.Name)
		default:
			return &topicError{kerr.InvalidRequest, "group configs are not lists: APPEND and SUBTRACT do not apply"}
		}
	}
	if validateOnly {
		return nil
	}
	if err := n.setShareGroupOverrides(rr.ResourceName, over); err != nil {
		return &topicError{kerr.KafkaStorageError, err.Error()}
	}
	return nil
}

func knownShareConfig(name string) bool {
	for _, n := range share.ConfigNames {
		if n == name {
			return true
		}
	}
	return false
}
