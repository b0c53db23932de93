// kafkajs 2.2 transactional producer, for test_transactions_clients.py.
// Usage: node transactional.js BOOTSTRAP TOPIC GROUP INPUT_TOPIC
// Three transactions on TOPIC's partitions 0 and 1: "c1" (five records, committed with
// sendOffsets committing GROUP's offset of INPUT_TOPIC partition 0 at 5), "ab" (five
// records and offset 7, aborted) and "c2" (five records, committed with offset 10).
// Then a second producer with the same transactionalId fences the first (its open
// transaction aborted), whose next send fails. Prints one JSON line per step.
'use strict'
const { Kafka, logLevel } = require('kafkajs')

function emit(kind, fields) {
  console.log(JSON.stringify({ kind, ...fields }))
}

async function main() {
  const [bootstrap, topic, group, input] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs-txn',
    brokers: bootstrap.split(','), // one broker, or a cluster's list
    logLevel: logLevel.WARN,
    retry: { retries: 5 },
  })
  const opts = { transactionalId: 'kafkajs-txn', idempotent: true, maxInFlightRequests: 1 }
  const producer = kafka.producer(opts)
  await producer.connect()
  for (const [name, commit, offset] of [['c1', true, '5'], ['ab', false, '7'], ['c2', true, '10']]) {
    const txn = await producer.transaction()
    const messages = []
    for (let i = 0; i < 5; i++) messages.push({ key: `k${i}`, value: `${name}-${i}`, partition: i % 2 })
    await txn.send({ topic, acks: -1, messages })
    await txn.sendOffsets({
      consumerGroupId: group,
      topics: [{ topic: input, partitions: [{ partition: 0, offset }] }],
    })
    if (commit) await txn.commit()
    else await txn.abort()
    emit('txn', { name, committed: commit })
  }
  // A second instance fences the first: its first transaction bumps the epoch and
  // aborts the zombie's open one (kafkajs asks for the producer id at transaction()).
  const zombieTxn = await producer.transaction()
  await zombieTxn.send({ topic, acks: -1, messages: [{ value: 'zombie', partition: 0 }] })
  const winner = kafka.producer(opts)
  await winner.connect()
  const txn = await winner.transaction()
  let fenced = null
  try {
    await zombieTxn.send({ topic, acks: -1, messages: [{ value: 'zombie-2', partition: 1 }] })
    await zombieTxn.commit()
  } catch (e) {
    fenced = e.type || e.name
  }
  emit('fenced', { error: fenced })
  await txn.send({ topic, acks: -1, messages: [{ value: 'winner', partition: 0 }] })
  await txn.commit()
  emit('txn', { name: 'winner', committed: true })
  await winner.disconnect()
  await producer.disconnect().catch(() => {})
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
