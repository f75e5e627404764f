// kafkajs.js drives an unmodified kafkajs client against a Spool node for the
// Go integration tests (../kafkajs_test.go). It is not a test by itself: the Go
// test decides what to expect and checks what this prints.
//
//   node kafkajs.js COMMAND 'JSON-ARGS'
//
// The bootstrap address comes from KAFKA_BROKERS (comma-separated host:port).
// One-shot commands print a single JSON document on stdout; `member` prints one
// JSON event per line until SIGTERM (clean leave) or SIGKILL (a crash). Logs
// go to stderr, at the level in KAFKAJS_LOG (NOTHING, ERROR, WARN, INFO,
// DEBUG; default WARN), so DEBUG shows every request and its API version.
//
// Commands:
//   create-topic    {topic, partitions}            -> {created}
//   metadata        {topic}                        -> admin.fetchTopicMetadata
//   produce         {topic, compression, messages} -> producer.send's RecordMetadata
//   offsets         {topic}                        -> admin.fetchTopicOffsets
//   offsets-by-time {topic, timestamps}            -> admin.fetchTopicOffsetsByTimestamp, per timestamp
//   consume         {group, topic, expect, lingerMs, autoCommit}
//                                                  -> {messages} read by a group consumer
//   member          {group, topic}                 -> events: join, message
//   transaction     {topic, transactionalId, commit, messages, offsetsGroup, offsets}
//                                                  -> {ended}: one transaction (sendOffsets
//                                                     to offsetsGroup when offsets are given),
//                                                     committed or aborted
//
// Message values, keys and header values travel as UTF-8 strings; timestamps
// as decimal milliseconds (kafkajs' own representation).
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const { Kafka, CompressionTypes, logLevel } = require('kafkajs')

const brokers = (process.env.KAFKA_BROKERS || '').split(',').filter(Boolean)
if (brokers.length === 0) {
  fail('KAFKA_BROKERS is not set')
}

const level = logLevel[(process.env.KAFKAJS_LOG || 'WARN').toUpperCase()]

// Logs to stderr only: stdout carries the JSON results.
const stderrLogger = () => ({ namespace, label, log }) => {
  process.stderr.write(JSON.stringify({ level: label, namespace, ...log }) + '\n')
}

// Short timeouts and few retries: a broker that does not answer should fail
// the test in seconds, not hang it for kafkajs' default minutes.
// TLS and SASL when the Go test asks (security_test.go): KAFKAJS_SSL_CA is
// the CA file to trust, KAFKAJS_SASL_MECHANISM (plain, scram-sha-256,
// scram-sha-512) with KAFKAJS_SASL_USERNAME and KAFKAJS_SASL_PASSWORD.
const ssl = process.env.KAFKAJS_SSL_CA
  ? { ca: [require('fs').readFileSync(process.env.KAFKAJS_SSL_CA, 'utf8')] }
  : undefined
const sasl = process.env.KAFKAJS_SASL_MECHANISM
  ? {
      mechanism: process.env.KAFKAJS_SASL_MECHANISM,
      username: process.env.KAFKAJS_SASL_USERNAME,
      password: process.env.KAFKAJS_SASL_PASSWORD,
    }
  : undefined

const kafka = new Kafka({
  clientId: 'spool-integration-kafkajs',
  brokers,
  ssl,
  sasl,
  logLevel: level === undefined ? logLevel.WARN : level,
  logCreator: stderrLogger,
  connectionTimeout: 3000,
  requestTimeout: 10000,
  retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 5 },
})

function fail(msg) {
  process.stderr.write(`kafkajs.js: ${msg}\n`)
  process.exit(2)
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

const str = b => (b === null || b === undefined ? null : b.toString('utf8'))

function decodeHeaders(headers) {
  const out = {}
  for (const [k, v] of Object.entries(headers || {})) {
    // kafkajs folds repeated header keys into an array.
    out[k] = Array.isArray(v) ? v.map(str) : str(v)
  }
  return out
}

function record(topic, partition, message) {
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: message.timestamp,
    key: str(message.key),
    value: str(message.value),
    headers: decodeHeaders(message.headers),
  }
}

async function withAdmin(fn) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

const compressions = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
}

const commands = {
  'create-topic': ({ topic, partitions }) =>
    withAdmin(async admin => ({
      created: await admin.createTopics({
        topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
        waitForLeaders: true,
      }),
    })),

  metadata: ({ topic }) => withAdmin(admin => admin.fetchTopicMetadata({ topics: [topic] })),

  offsets: ({ topic }) => withAdmin(admin => admin.fetchTopicOffsets(topic)),

  'offsets-by-time': ({ topic, timestamps }) =>
    withAdmin(async admin => {
      const out = []
      for (const ts of timestamps) out.push(await admin.fetchTopicOffsetsByTimestamp(topic, ts))
      return out
    }),

  async produce({ topic, compression, messages }) {
    const codec = compressions[compression || 'none']
    if (codec === undefined) {
      // kafkajs ships only GZIP; snappy, lz4 and zstd need third-party codec packages.
      fail(`compression ${compression} is not built into kafkajs`)
    }
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    try {
      return await producer.send({ topic, compression: codec, acks: -1, messages })
    } finally {
      await producer.disconnect()
    }
  },

  async transaction({ topic, transactionalId, commit, messages, offsetsGroup, offsets }) {
    const producer = kafka.producer({
      allowAutoTopicCreation: false,
      transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
    })
    await producer.connect()
    try {
      const txn = await producer.transaction()
      await txn.send({ topic, acks: -1, messages })
      if (offsets) await txn.sendOffsets({ consumerGroupId: offsetsGroup, topics: offsets })
      if (commit) await txn.commit()
      else await txn.abort()
      return { ended: commit ? 'commit' : 'abort' }
    } finally {
      await producer.disconnect()
    }
  },

  // consume reads with a group consumer until `expect` messages arrived, then
  // lingers `lingerMs` to catch anything beyond them (duplicates, records from
  // before the committed offset), and leaves the group cleanly. With
  // autoCommit false it commits nothing: a consumer that processed records but
  // stopped before committing them.
  async consume({ group, topic, expect, lingerMs = 500, autoCommit = true }) {
    const consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: 10000,
      heartbeatInterval: 500,
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    })
    const messages = []
    let reached
    const done = new Promise(resolve => (reached = resolve))
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      autoCommit,
      eachMessage: async ({ topic, partition, message }) => {
        messages.push(record(topic, partition, message))
        if (messages.length >= expect) reached()
      },
    })
    if (expect > 0) await done
    await new Promise(resolve => setTimeout(resolve, lingerMs))
    await consumer.disconnect()
    return { messages }
  },

  // member stays in the group, reporting every assignment it is handed and
  // every record it reads, until SIGTERM makes it leave the group cleanly.
  async member({ group, topic }) {
    const consumer = kafka.consumer({
      groupId: group,
      sessionTimeout: 6000,
      rebalanceTimeout: 10000,
      heartbeatInterval: 300,
      maxWaitTimeInMs: 200,
      allowAutoTopicCreation: false,
    })
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) =>
      emit({
        event: 'join',
        memberId: payload.memberId,
        leaderId: payload.leaderId,
        isLeader: payload.isLeader,
        assignment: payload.memberAssignment[topic] || [],
      })
    )
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      emit({ event: 'crash', error: String(payload.error), restart: payload.restart })
      // kafkajs gives up on this member: exit, so the test fails now rather than at its deadline.
      if (!payload.restart) process.exit(1)
    })
    process.on('SIGTERM', async () => {
      await consumer.disconnect()
      emit({ event: 'left' })
      process.exit(0)
    })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) =>
        emit({ event: 'message', ...record(topic, partition, message) }),
    })
    return new Promise(() => {}) // until a signal
  },
}

async function main() {
  const [command, rawArgs] = process.argv.slice(2)
  const run = commands[command]
  if (!run) fail(`unknown command ${JSON.stringify(command)}; want one of ${Object.keys(commands)}`)
  let args
  try {
    args = JSON.parse(rawArgs || '{}')
  } catch (e) {
    fail(`bad JSON arguments: ${e.message}`)
  }
  const result = await run(args)
  if (result !== undefined) emit(result)
}

main().catch(e => fail(`${e.name}: ${e.message}${e.stack ? '\n' + e.stack : ''}`))
