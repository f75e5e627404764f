package integration

// confluent-kafka-python's AdminClient (Debian's python3-confluent-kafka,
// librdkafka underneath) against a real node: CreatePartitions,
// AlterConfigs and DescribeConfigs of the broker, from py/admin.py. The
// effects are checked with franz-go, independently of the script.

import (
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// debianPython is the interpreter python3-confluent-kafka is installed for;
// a python3 earlier on PATH (pyenv) may not have it.
const debianPython = "/usr/bin/python3"

func TestAdminPythonConfluent(t *testing.T) {
	n := StartNode(t, WithArgs("--default-partitions", "2"))
	const topic = "py-admin"
	franzCreateTopic(t, n.KafkaAddr, topic, 1)

	cmd := exec.Command(debianPython, "py/admin.py", n.KafkaAddr, topic)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s py/admin.py (needs python3-confluent-kafka): %v\n%s\n%s", debianPython, err, out, stderr)
	}
	var res struct {
		CreatePartitions string `json:"create_partitions"`
		Shrink           string `json:"shrink"`
		AlterConfigs     string `json:"alter_configs"`
		AlterUnknown     string `json:"alter_unknown"`
		BrokerConfigs    map[string]struct {
			Value     string `json:"value"`
			Source    int    `json:"source"`
			ReadOnly  bool   `json:"read_only"`
			IsDefault bool   `json:"is_default"`
		} `json:"broker_configs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if res.CreatePartitions != "ok" || res.AlterConfigs != "ok" {
		t.Fatalf("script: %s", out)
	}
	if res.Shrink != "INVALID_PARTITIONS" || res.AlterUnknown != "INVALID_CONFIG" {
		t.Errorf("shrink answered %q (want INVALID_PARTITIONS), unknown config %q (want INVALID_CONFIG)", res.Shrink, res.AlterUnknown)
	}

	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	topics, err := adm.ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil || len(topics[topic].Partitions) != 5 {
		t.Fatalf("%s has %d partitions after create_partitions(5): %v", topic, len(topics[topic].Partitions), err)
	}
	if v, src := topicConfigSource(t, adm, topic, "retention.ms"); v != "90000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms = %s (%s) after alter_configs", v, src)
	}

	np, ok := res.BrokerConfigs["num.partitions"]
	if !ok || np.Value != "2" || np.Source != int(kmsg.ConfigSourceStaticBrokerConfig) || !np.ReadOnly || np.IsDefault {
		t.Errorf("num.partitions as librdkafka sees it: %+v %v", np, ok)
	}
	lr, ok := res.BrokerConfigs["log.retention.ms"]
	if !ok || lr.Source != int(kmsg.ConfigSourceDefaultConfig) || !lr.ReadOnly || !lr.IsDefault {
		t.Errorf("log.retention.ms as librdkafka sees it: %+v %v", lr, ok)
	}
}
