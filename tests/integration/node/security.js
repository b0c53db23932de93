#!/usr/bin/env node
// kafkajs over TLS and SASL against a running Sluice broker, driven by
// tests/integration/security_helpers.py (test_security_*.py).
//
// Usage: node security.js '<json>'  where the JSON object has
//   cmd:      "roundtrip" | "connect"
//   brokers:  ["127.0.0.1:PORT"]
//   ssl:      null | {ca: FILE, cert: FILE, key: FILE, rejectUnauthorized: bool}
//   sasl:     null | {mechanism: "plain"|"scram-sha-256"|"scram-sha-512", username, password}
//   topic, records: [[key b64, value b64], ...]        (roundtrip)
//
// roundtrip: produces the records to partition 0 of an existing topic (acks -1) and
//   reads the partition back with real ListOffsets/Fetch requests through kafkajs's
//   internal Cluster (as roundtrip.js does; kafkajs has no assign()).
//   Output: {produced: [{offset, key, value}], fetched: [...]}
// connect: admin.connect() + fetchTopicMetadata(); output {ok: true, topics: [names]}
//   or {ok: false, error: {name, message, type, code}}.
// Either way `saslResponses` lists the (errorCode, errorMessage) of every
// SaslAuthenticate response kafkajs decoded, since kafkajs's own authentication error
// keeps only a message.
//
// Exit code 0 whenever a JSON line was printed (errors are data for the caller).

'use strict'

const fs = require('fs')

let kafkajs
try {
  kafkajs = require('kafkajs')
} catch (e) {
  process.stderr.write('kafkajs is not installed: run `npm ci` in tests/integration/node (' + e.message + ')\n')
  process.exit(3)
}
const { Kafka, logLevel, CompressionTypes } = kafkajs

// Record what the broker answered to each SaslAuthenticate (see header).
const saslResponses = []
for (const v of ['v0', 'v1']) {
  let mod
  try {
    mod = require(`kafkajs/src/protocol/requests/saslAuthenticate/${v}/response`)
  } catch (e) {
    continue
  }
  const orig = mod.decode
  mod.decode = async raw => {
    const d = await orig(raw)
    saslResponses.push({ version: v, errorCode: d.errorCode, errorMessage: d.errorMessage })
    return d
  }
}

const args = JSON.parse(process.argv[2] || '{}')
const READ_UNCOMMITTED = 0

function kafkaClient() {
  const conf = {
    clientId: 'sluice-it-kafkajs-security',
    brokers: args.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    authenticationTimeout: 10000,
    requestTimeout: 20000,
    retry: { retries: args.cmd === 'connect' ? 0 : 3, initialRetryTime: 200, maxRetryTime: 2000 },
  }
  if (args.ssl) {
    const ssl = { rejectUnauthorized: args.ssl.rejectUnauthorized !== false }
    if (args.ssl.ca) ssl.ca = [fs.readFileSync(args.ssl.ca, 'utf-8')]
    if (args.ssl.cert) ssl.cert = fs.readFileSync(args.ssl.cert, 'utf-8')
    if (args.ssl.key) ssl.key = fs.readFileSync(args.ssl.key, 'utf-8')
    conf.ssl = ssl
  }
  if (args.sasl) conf.sasl = args.sasl
  return new Kafka(conf)
}

function describeError(e) {
  if (!e) return null
  return {
    name: e.name,
    message: e.message,
    type: e.type || null,
    code: e.code === undefined ? null : e.code,
    cause: e.cause ? describeError(e.cause) : null,
    originalError: e.originalError ? describeError(e.originalError) : null,
  }
}

const b64 = b => (b == null ? null : Buffer.from(b).toString('base64'))

async function roundtrip(kafka) {
  const { topic } = args
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false })
  await producer.connect()
  const messages = args.records.map(([k, v]) => ({
    key: Buffer.from(k, 'base64'),
    value: Buffer.from(v, 'base64'),
    partition: 0,
  }))
  const res = await producer.send({ topic, acks: -1, timeout: 20000, compression: CompressionTypes.None, messages })
  await producer.disconnect()
  if (res.length !== 1 || res[0].errorCode !== 0 || res[0].partition !== 0) {
    throw new Error('unexpected produce response ' + JSON.stringify(res))
  }
  const base = BigInt(res[0].baseOffset)
  const produced = messages.map((m, i) => ({ offset: (base + BigInt(i)).toString(), key: b64(m.key), value: b64(m.value) }))

  const createClusterKey = Object.getOwnPropertySymbols(kafka).find(
    s => s.description === 'private:Kafka:createCluster'
  )
  if (!createClusterKey) throw new Error('kafkajs internals changed: createCluster factory not found')
  const cluster = kafka[createClusterKey]({ metadataMaxAge: 300000, allowAutoTopicCreation: false, isolationLevel: READ_UNCOMMITTED })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const latestOffs = await cluster.fetchTopicsOffset([{ topic, partitions: [{ partition: 0 }], fromBeginning: false }])
  const latest = BigInt(latestOffs[0].partitions[0].offset)
  const leaders = cluster.findLeaderForPartitions(topic, [0])
  const nodeId = Object.keys(leaders)[0]
  const broker = await cluster.findBroker({ nodeId })
  const fetched = []
  let next = 0n
  const deadline = Date.now() + 30000
  while (next < latest) {
    if (Date.now() > deadline) throw new Error(`fetch did not reach ${latest} (at ${next})`)
    const resp = await broker.fetch({
      replicaId: -1,
      isolationLevel: READ_UNCOMMITTED,
      maxWaitTime: 200,
      minBytes: 1,
      maxBytes: 1024 * 1024,
      topics: [{ topic, partitions: [{ partition: 0, fetchOffset: next.toString(), maxBytes: 1024 * 1024 }] }],
    })
    for (const t of resp.responses) {
      for (const part of t.partitions) {
        if (part.errorCode !== 0) throw new Error(`fetch error ${part.errorCode}`)
        for (const m of part.messages) {
          const off = BigInt(m.offset)
          if (off < next) continue
          fetched.push({ offset: m.offset, key: b64(m.key), value: b64(m.value) })
          next = off + 1n
        }
      }
    }
  }
  await cluster.disconnect()
  return { produced, fetched }
}

async function connect(kafka) {
  const admin = kafka.admin({ retry: { retries: 0 } })
  try {
    await admin.connect()
    const md = await admin.fetchTopicMetadata()
    return { ok: true, topics: md.topics.map(t => t.name).sort() }
  } catch (e) {
    return { ok: false, error: describeError(e) }
  } finally {
    try {
      await admin.disconnect()
    } catch (e) {
      // already broken: nothing to close
    }
  }
}

const overall = setTimeout(() => {
  process.stdout.write(JSON.stringify({ error: { name: 'Timeout', message: 'security.js: overall timeout (90s)' }, saslResponses }) + '\n',
    () => process.exit(4))
}, 90000)

async function main() {
  const kafka = kafkaClient()
  if (args.cmd === 'roundtrip') return roundtrip(kafka)
  if (args.cmd === 'connect') return connect(kafka)
  throw new Error('unknown cmd ' + args.cmd)
}

main()
  .then(out => {
    clearTimeout(overall)
    process.stdout.write(JSON.stringify({ ...out, saslResponses }) + '\n', () => process.exit(0))
  })
  .catch(e => {
    clearTimeout(overall)
    process.stdout.write(JSON.stringify({ error: describeError(e), saslResponses }) + '\n', () => process.exit(0))
  })
