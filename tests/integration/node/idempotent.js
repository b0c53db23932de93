// kafkajs 2.2 idempotent producer (idempotent: true, acks -1), for test_idempotence.py.
// Usage: node idempotent.js BOOTSTRAP TOPIC N
// Sends N records, record i ("kjs-i") to partition i % 2, in chunks of 50 with up to
// five requests in flight, and prints one JSON line: {"acked": N, "producer_id": ...}.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

async function main() {
  const [bootstrap, topic, nArg] = process.argv.slice(2)
  const N = Number(nArg)
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs-idempotent',
    brokers: bootstrap.split(','), // one broker, or a cluster's list
    logLevel: logLevel.WARN,
    retry: { retries: 5 },
  })
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 5 })
  await producer.connect()
  let acked = 0
  for (let start = 0; start < N; start += 50) {
    const messages = []
    for (let i = start; i < Math.min(N, start + 50); i++)
      messages.push({ key: `k${i}`, value: `kjs-${i}`, partition: i % 2 })
    const res = await producer.send({ topic, acks: -1, messages })
    for (const r of res) if (r.errorCode !== 0) throw new Error(`partition ${r.partition}: ${r.errorCode}`)
    acked += messages.length
  }
  await producer.disconnect()
  console.log(JSON.stringify({ acked }))
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
