"""confluent-kafka-python (librdkafka) AdminClient against a Spool node.

Usage: admin.py BOOTSTRAP TOPIC

Grows TOPIC to 5 partitions, sets retention.ms=90000 on it with
AlterConfigs, tries an unknown config, describes broker 1's configs, and
prints one JSON object with what each call answered. Any exception from a
call that should succeed exits non-zero.
"""
import json
import sys

from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions
from confluent_kafka import KafkaException


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}

    for t, f in admin.create_partitions([NewPartitions(topic, 5)], request_timeout=15).items():
        f.result()
        out["create_partitions"] = "ok"

    try:
        for r, f in admin.create_partitions([NewPartitions(topic, 2)], request_timeout=15).items():
            f.result()
        out["shrink"] = "accepted"
    except KafkaException as e:
        out["shrink"] = e.args[0].name()

    res = ConfigResource("topic", topic, set_config={"retention.ms": "90000"})
    for r, f in admin.alter_configs([res], request_timeout=15).items():
        f.result()
        out["alter_configs"] = "ok"

    bad = ConfigResource("topic", topic, set_config={"no.such.config": "1"})
    try:
        for r, f in admin.alter_configs([bad], request_timeout=15).items():
            f.result()
        out["alter_unknown"] = "accepted"
    except KafkaException as e:
        out["alter_unknown"] = e.args[0].name()

    broker = ConfigResource("broker", "1")
    for r, f in admin.describe_configs([broker], request_timeout=15).items():
        configs = f.result()
        out["broker_configs"] = {
            name: {
                "value": c.value,
                "source": c.source,
                "read_only": c.is_read_only,
                "is_default": c.is_default,
            }
            for name, c in configs.items()
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
