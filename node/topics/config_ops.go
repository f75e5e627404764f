package topics

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/topicconfig"
)

// ConfigsAfter is topic name's configs once IncrementalAlterConfigs' ops
// are applied to them (SET, DELETE, and APPEND and SUBTRACT on lists,
// whose current value is the topic's own or, when it has none, the
// default over defaults); nothing is stored. Refusals are Refusal: a name
// named twice or an unknown operation ErrInvalidRequest, an unknown key or
// a bad operation on it ErrInvalidConfig.
func (c *Catalog) ConfigsAfter(name string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, defaults topicconfig.Defaults) (map[string]string, error) {
	if err := membership.ValidateTopicName(name); err != nil {
		return nil, refuse(ErrInvalidName, err.Error())
	}
	spec, ok := c.Topic(name)
	if !ok {
		return nil, refuse(ErrUnknownTopic, "unknown topic "+name)
	}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Name] {
			return nil, refuse(ErrInvalidRequest, fmt.Sprintf("config %q named twice", op.Name))
		}
		seen[op.Name] = true
	}
	effective, err := topicconfig.Parse(defaults, spec.Configs)
	if err != nil {
		return nil, refuse(ErrInvalidConfig, err.Error())
	}
	current := func(name string) string {
		if v, ok := spec.Configs[name]; ok {
			return v
		}
		for _, e := range effective.Describe() {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	configs := maps.Clone(spec.Configs)
	if configs == nil {
		configs = make(map[string]string)
	}
	for _, op := range ops {
		typ, known := topicconfig.Keys[op.Name]
		if !known {
			return nil, refuse(ErrInvalidConfig, fmt.Sprintf("unknown topic config %q", op.Name))
		}
		value := ""
		if op.Value != nil {
			value = *op.Value
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return nil, refuse(ErrInvalidConfig, fmt.Sprintf("SET of %q with a null value", op.Name))
			}
			configs[op.Name] = value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(configs, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if typ != kmsg.ConfigTypeList {
				return nil, refuse(ErrInvalidConfig, fmt.Sprintf("%s on %q, which is not a list", op.Op, op.Name))
			}
			list := splitList(current(op.Name))
			for _, v := range splitList(value) {
				has := slices.Contains(list, v)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
					list = append(list, v)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
					list = slices.DeleteFunc(list, func(x string) bool { return x == v })
				}
			}
			configs[op.Name] = strings.Join(list, ",")
		default:
			return nil, refuse(ErrInvalidRequest, fmt.Sprintf("unknown config operation %d on %q", op.Op, op.Name))
		}
	}
	return configs, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
