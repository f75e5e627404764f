// failover.js keeps one kafkajs producer, with kafkajs' default retries,
// alive across a leader failover for ../replication_clients_test.go. It is
// not a test by itself: the Go test decides what to expect.
//
//   KAFKA_BROKERS=host:port,... node failover.js
//
// It reads one JSON command a line on stdin and answers one JSON line on
// stdout for each:
//   {"op":"produce","topic":T,"partition":P,"values":[...]}
//       -> {"offsets":[...]} (acks=-1; the offset of each value) or {"error":"..."}
//   {"op":"read","topic":T,"partition":P,"until":N}
//       -> {"messages":[{"partition","offset","value"}]}: a fresh group
//          consumer from the beginning until it has read offset N
// Logs go to stderr, at KAFKAJS_LOG (default WARN).
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const readline = require('readline')
const { Kafka, logLevel } = require('kafkajs')

const brokers = (process.env.KAFKA_BROKERS || '').split(',').filter(Boolean)
if (brokers.length === 0) {
  process.stderr.write('failover.js: KAFKA_BROKERS is not set\n')
  process.exit(2)
}
const level = logLevel[(process.env.KAFKAJS_LOG || 'WARN').toUpperCase()]

// No retry option: kafkajs' defaults are what is under test.
const kafka = new Kafka({
  clientId: 'spool-integration-failover',
  brokers,
  logLevel: level === undefined ? logLevel.WARN : level,
  logCreator: () => ({ namespace, label, log }) =>
    process.stderr.write(JSON.stringify({ level: label, namespace, ...log }) + '\n'),
})

const producer = kafka.producer({ allowAutoTopicCreation: false })
let reads = 0

async function produce({ topic, partition, values }) {
  const res = await producer.send({
    topic,
    acks: -1,
    messages: values.map(v => ({ value: v, partition })),
  })
  const base = Number(res.find(r => r.partition === partition).baseOffset)
  return { offsets: values.map((_, i) => base + i) }
}

async function read({ topic, partition, until }) {
  const consumer = kafka.consumer({ groupId: `failover-read-${process.pid}-${reads++}`, maxWaitTimeInMs: 200 })
  const messages = []
  let reached
  const done = new Promise(resolve => (reached = resolve))
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition: p, message }) => {
      if (p !== partition) return
      const offset = Number(message.offset)
      messages.push({ partition: p, offset, value: message.value.toString('utf8') })
      if (offset >= until) reached()
    },
  })
  await done
  await consumer.disconnect()
  return { messages }
}

async function main() {
  await producer.connect()
  const lines = readline.createInterface({ input: process.stdin })
  for await (const line of lines) {
    const cmd = JSON.parse(line)
    let out
    try {
      out = cmd.op === 'produce' ? await produce(cmd) : await read(cmd)
    } catch (e) {
      out = { error: `${e.name}: ${e.message}` }
    }
    process.stdout.write(JSON.stringify(out) + '\n')
  }
  await producer.disconnect()
}

main().catch(e => {
  process.stderr.write(`failover.js: ${e.stack || e}\n`)
  process.exit(1)
})
