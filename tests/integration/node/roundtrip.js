#!/usr/bin/env node
// kafkajs round trip against a running Sluice broker, driven by
// tests/integration/test_kafkajs.py.
//
// Install dependencies first (what `make test` does before running pytest):
//     cd tests/integration/node && npm ci
//
// Usage: node roundtrip.js <bootstrap host:port> <topic> [records] [partitions]
//
// 1. creates <topic> with the kafkajs admin client (CreateTopics),
// 2. produces the records with the normal kafkajs producer (acks -1, no
//    compression, not idempotent, explicit partition per record, keys,
//    headers and explicit timestamps) and derives each record's offset from
//    the Produce responses (baseOffset + position within the partition batch),
// 3. reads everything back with real ListOffsets and Fetch requests.
//
// Why kafkajs internals for step 3: kafkajs's public consumer only works
// through consumer groups (subscribe + JoinGroup/SyncGroup/OffsetCommit) and
// has no assign(); Sluice has no group APIs yet.  So we build the client's own
// internal Cluster object (the same one kafkajs.producer()/consumer() use,
// obtained through the Kafka client's private createCluster factory) and call
// cluster.fetchTopicsOffset() and broker.fetch().  These go through kafkajs's
// real protocol codecs, request-version negotiation (ApiVersions) and record
// batch decoder, i.e. exactly the bytes a kafkajs consumer would exchange.
//
// Output: a single JSON line on stdout:
//   {produced: [...], fetched: [...], earliest: {p: off}, latest: {p: off},
//    partitionsInMetadata: n, created: bool, brokerVersions: {...}}
// Binary fields are base64.  Exit code 0 only if every step succeeded.

'use strict'

const crypto = require('crypto')

let kafkajs
try {
  kafkajs = require('kafkajs')
} catch (e) {
  process.stderr.write(
    'kafkajs is not installed: run `npm ci` in tests/integration/node (' + e.message + ')\n'
  )
  process.exit(3)
}
const { Kafka, logLevel, CompressionTypes, Partitioners } = kafkajs

const [bootstrap, topic, nArg, pArg] = process.argv.slice(2)
if (!bootstrap || !topic) {
  process.stderr.write('usage: node roundtrip.js <bootstrap> <topic> [records] [partitions]\n')
  process.exit(2)
}
const N = parseInt(nArg || '2000', 10)
const P = parseInt(pArg || '3', 10)
const CHUNK = 100
const READ_UNCOMMITTED = 0

const b64 = b => (b == null ? null : Buffer.from(b).toString('base64'))

function headersToJson(h) {
  const out = {}
  for (const k of Object.keys(h || {})) {
    const v = h[k]
    out[k] = Array.isArray(v) ? v.map(b64) : b64(v)
  }
  return out
}

function valueFor(i) {
  const d = crypto.createHash('sha256').update(`js/${i}`).digest()
  const len = 50 + ((i * 7919) % 251)
  const parts = [Buffer.from(`js${i}|`)]
  let total = parts[0].length
  while (total < len) {
    parts.push(d)
    total += d.length
  }
  return Buffer.concat(parts).subarray(0, len)
}

async function withDeadline(promise, ms, what) {
  let timer
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, t])
  } finally {
    clearTimeout(timer)
  }
}

async function main() {
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs',
    brokers: bootstrap.split(','), // one broker, or a cluster's list
    logLevel: logLevel.WARN,
    connectionTimeout: 5000,
    requestTimeout: 30000,
    retry: { retries: 5, initialRetryTime: 200, maxRetryTime: 2000 },
  })

  // 1. CreateTopics through the admin client.
  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: P, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 10000,
  })
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  const partitionsInMetadata = md.topics[0].partitions.length
  await admin.disconnect()

  // 2. Produce.
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    idempotent: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  })
  await producer.connect()
  const base = Date.now() - 120000
  const produced = []
  for (let start = 0; start < N; start += CHUNK) {
    const messages = []
    for (let i = start; i < Math.min(N, start + CHUNK); i++) {
      messages.push({
        key: Buffer.from(`jk${String(i).padStart(6, '0')}`),
        value: valueFor(i),
        partition: i % P,
        timestamp: String(base + i),
        headers: { idx: String(i), sig: crypto.createHash('md5').update(`h${i}`).digest() },
      })
    }
    const res = await producer.send({
      topic,
      acks: -1,
      timeout: 30000,
      compression: CompressionTypes.None,
      messages,
    })
    const base0 = {}
    for (const r of res) {
      if (r.topicName !== topic || r.errorCode !== 0) {
        throw new Error('unexpected produce response ' + JSON.stringify(r))
      }
      base0[r.partition] = BigInt(r.baseOffset)
    }
    // kafkajs groups a send() by partition, preserving order within it.
    const idx = {}
    for (const m of messages) {
      if (base0[m.partition] === undefined) throw new Error('no response for partition ' + m.partition)
      const k = idx[m.partition] || 0n
      idx[m.partition] = k + 1n
      produced.push({
        partition: m.partition,
        offset: (base0[m.partition] + k).toString(),
        key: b64(m.key),
        value: b64(m.value),
        headers: headersToJson({ idx: Buffer.from(m.headers.idx), sig: m.headers.sig }),
        timestamp: m.timestamp,
      })
    }
  }
  await producer.disconnect()

  // 3. Read back through kafkajs internals (see header comment).
  const createClusterKey = Object.getOwnPropertySymbols(kafka).find(
    s => s.description === 'private:Kafka:createCluster'
  )
  if (!createClusterKey) throw new Error('kafkajs internals changed: createCluster factory not found')
  const cluster = kafka[createClusterKey]({
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    isolationLevel: READ_UNCOMMITTED,
  })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const partitionIds = [...Array(P).keys()]
  const asMap = offs => {
    const out = {}
    for (const t of offs) {
      if (t.topic !== topic) continue
      for (const p of t.partitions) out[p.partition] = p.offset
    }
    return out
  }
  const partitionsReq = [{ topic, partitions: partitionIds.map(p => ({ partition: p })) }]
  const earliest = asMap(await cluster.fetchTopicsOffset([{ ...partitionsReq[0], fromBeginning: true }]))
  const latest = asMap(await cluster.fetchTopicsOffset([{ ...partitionsReq[0], fromBeginning: false }]))

  const leaders = cluster.findLeaderForPartitions(topic, partitionIds)
  const next = {}
  for (const p of partitionIds) next[p] = BigInt(earliest[p])
  const fetched = []
  const brokerVersions = {} // ranges the broker advertised (informational)
  const deadline = Date.now() + 60000
  for (const nodeId of Object.keys(leaders)) {
    const broker = await cluster.findBroker({ nodeId })
    brokerVersions[nodeId] = {
      Fetch: broker.versions && broker.versions[1],
      Produce: broker.versions && broker.versions[0],
      ListOffsets: broker.versions && broker.versions[2],
    }
    let pending = leaders[nodeId].filter(p => next[p] < BigInt(latest[p]))
    while (pending.length > 0) {
      if (Date.now() > deadline) {
        const at = Object.fromEntries(Object.entries(next).map(([k, v]) => [k, v.toString()]))
        throw new Error('fetch did not reach the end within 60s: ' + JSON.stringify({ at, latest }))
      }
      const resp = await withDeadline(
        broker.fetch({
          replicaId: -1,
          isolationLevel: READ_UNCOMMITTED,
          maxWaitTime: 200,
          minBytes: 1,
          maxBytes: 4 * 1024 * 1024,
          topics: [
            {
              topic,
              partitions: pending.map(p => ({ partition: p, fetchOffset: next[p].toString(), maxBytes: 1024 * 1024 })),
            },
          ],
        }),
        30000,
        'fetch'
      )
      for (const t of resp.responses) {
        if (t.topicName !== topic) throw new Error('fetch answered for unexpected topic ' + t.topicName)
        for (const part of t.partitions) {
          if (part.errorCode !== 0) throw new Error(`fetch error ${part.errorCode} on partition ${part.partition}`)
          for (const m of part.messages) {
            const off = BigInt(m.offset)
            // A fetch may start inside a batch: skip what was already read.
            if (off < next[part.partition]) continue
            if (off !== next[part.partition]) {
              throw new Error(`gap in partition ${part.partition}: expected ${next[part.partition]} got ${off}`)
            }
            fetched.push({
              partition: part.partition,
              offset: m.offset,
              key: b64(m.key),
              value: b64(m.value),
              headers: headersToJson(m.headers),
              timestamp: m.timestamp,
            })
            next[part.partition] = off + 1n
          }
        }
      }
      pending = pending.filter(p => next[p] < BigInt(latest[p]))
    }
  }
  await cluster.disconnect()

  return { created, partitionsInMetadata, produced, fetched, earliest, latest, brokerVersions }
}

const overall = setTimeout(() => {
  process.stderr.write('roundtrip.js: overall timeout (150s)\n')
  process.exit(4)
}, 150000)

main()
  .then(out => {
    clearTimeout(overall)
    // Exit only once the (large) JSON line is fully flushed to the pipe.
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0))
  })
  .catch(e => {
    process.stderr.write('roundtrip.js failed: ' + (e && e.stack ? e.stack : String(e)) + '\n')
    process.exit(1)
  })
