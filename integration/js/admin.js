// admin.js drives kafkajs' admin client against a Spool node for the new
// admin APIs (../admin_kafkajs_test.go): it grows TOPIC to 4 partitions
// (CreatePartitions), deletes partition 0's records before offset 2
// (DeleteRecords), sets retention.ms with AlterConfigs and describes broker
// 1's configs (DescribeConfigs), then prints one JSON document on stdout.
//
//   KAFKA_BROKERS=host:port node admin.js TOPIC
'use strict'

const { Kafka, ConfigResourceTypes, logLevel } = require('kafkajs')

async function main () {
  const topic = process.argv[2]
  const kafka = new Kafka({
    clientId: 'spool-integration-kafkajs-admin',
    brokers: (process.env.KAFKA_BROKERS || '').split(',').filter(Boolean),
    logLevel: logLevel.WARN,
    retry: { retries: 3 }
  })
  const admin = kafka.admin()
  await admin.connect()
  const out = {}
  try {
    await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
    out.createPartitions = 'ok'
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '2' }] })
    out.deleteRecords = 'ok'
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }] }]
    })
    out.alterConfigs = 'ok'
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.BROKER, name: '1' }]
    })
    out.brokerConfigs = {}
    for (const e of described.resources[0].configEntries) {
      out.brokerConfigs[e.configName] = { value: e.configValue, readOnly: e.readOnly, source: e.configSource }
    }
  } finally {
    await admin.disconnect()
  }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch(err => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n')
  process.exit(1)
})
