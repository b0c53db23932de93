#!/usr/bin/env node
// Compressed produce against Sluice through kafkajs, driven by
// tests/integration/test_kafkajs.py.  Install dependencies first:
//     cd tests/integration/node && npm ci
//
// Usage: node compressed.js <bootstrap host:port> <existing topic>
//
// With ONE producer (one connection to the broker): sends a GZIP-compressed
// batch (kafkajs compresses GZIP with node's zlib, always, unlike librdkafka
// which silently falls back to uncompressed against a broker that does not
// advertise Produce v0), expects it to be refused, then sends an
// uncompressed record and reports where it landed.
//
// Output: one JSON line {gzipError: {type, code, retriable} | null,
//                        plain: {partition, baseOffset, errorCode}}

'use strict'

let kafkajs
try {
  kafkajs = require('kafkajs')
} catch (e) {
  process.stderr.write('kafkajs is not installed: run `npm ci` in tests/integration/node\n')
  process.exit(3)
}
const { Kafka, logLevel, CompressionTypes, Partitioners } = kafkajs

const [bootstrap, topic] = process.argv.slice(2)
if (!bootstrap || !topic) {
  process.stderr.write('usage: node compressed.js <bootstrap> <topic>\n')
  process.exit(2)
}

async function main() {
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs-gzip',
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    // No retries: the first answer from the broker is what we want to see.
    retry: { retries: 0 },
  })
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    idempotent: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    retry: { retries: 0 },
  })
  await producer.connect()
  let gzipError = null
  try {
    await producer.send({
      topic,
      acks: -1,
      compression: CompressionTypes.GZIP,
      messages: [{ key: 'gz', value: 'a'.repeat(5000), partition: 0 }],
    })
  } catch (e) {
    // KafkaJSNumberOfRetriesExceeded wraps the protocol error in .cause (or originalError).
    let err = e
    while (err && err.type === undefined && (err.cause || err.originalError)) err = err.cause || err.originalError
    gzipError = { type: err && err.type, code: err && err.code, retriable: err && err.retriable, name: e.name }
  }
  const res = await producer.send({
    topic,
    acks: -1,
    compression: CompressionTypes.None,
    messages: [{ key: 'plain', value: 'b'.repeat(5000), partition: 0 }],
  })
  await producer.disconnect()
  const r = res.find(x => x.topicName === topic)
  return { gzipError, plain: { partition: r.partition, baseOffset: r.baseOffset, errorCode: r.errorCode } }
}

const overall = setTimeout(() => {
  process.stderr.write('compressed.js: overall timeout (60s)\n')
  process.exit(4)
}, 60000)

main()
  .then(out => {
    clearTimeout(overall)
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0))
  })
  .catch(e => {
    process.stderr.write('compressed.js failed: ' + (e && e.stack ? e.stack : String(e)) + '\n')
    process.exit(1)
  })
