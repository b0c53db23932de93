#!/usr/bin/env node
// kafkajs consumer-group member against a running Sluice broker, driven by
// tests/integration/test_groups_clients.py.
//
// Usage: node group_consume.js <bootstrap host:port> <topic> <groupId> <expected records>
//
// Joins <groupId> (FindCoordinator, JoinGroup with the MEMBER_ID_REQUIRED
// retry, SyncGroup, Heartbeat), subscribes to <topic> from the beginning
// (used only when the group has no committed offset), handles records until
// <expected records> arrived, committing after each handled batch
// (autoCommit off, explicit commitOffsets), describes the group while it is
// Stable, then disconnects (LeaveGroup) and reads the committed offsets back
// with the admin client (OffsetFetch).
//
// Output: one JSON line on stdout:
//   {records: [{partition, offset, key, value, headers, timestamp}], join: {...},
//    describe: {...}, committedBeforeLeave: {p: off}, committedAfterLeave: {p: off}}
// Binary fields are base64.  Exit code 0 only if every step succeeded.

'use strict'

let kafkajs
try {
  kafkajs = require('kafkajs')
} catch (e) {
  process.stderr.write('kafkajs is not installed: run `npm ci` in tests/integration/node (' + e.message + ')\n')
  process.exit(3)
}
const { Kafka, logLevel, AssignerProtocol } = kafkajs

const [bootstrap, topic, groupId, expectedArg] = process.argv.slice(2)
if (!bootstrap || !topic || !groupId || !expectedArg) {
  process.stderr.write('usage: node group_consume.js <bootstrap> <topic> <groupId> <expected>\n')
  process.exit(2)
}
const EXPECTED = parseInt(expectedArg, 10)
const b64 = b => (b == null ? null : Buffer.from(b).toString('base64'))

function offsetsMap(fetched) {
  const out = {}
  for (const t of fetched) {
    if (t.topic !== undefined && t.topic !== topic) continue
    for (const p of t.partitions) out[p.partition] = p.offset
  }
  return out
}

async function main() {
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs-group',
    brokers: bootstrap.split(','), // one broker, or a cluster's list
    logLevel: logLevel.WARN,
    connectionTimeout: 5000,
    requestTimeout: 30000,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 2000 },
  })
  const admin = kafka.admin()
  await admin.connect()

  const consumer = kafka.consumer({
    groupId,
    sessionTimeout: 10000,
    rebalanceTimeout: 20000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
  })
  let join = null
  consumer.on(consumer.events.GROUP_JOIN, e => {
    join = {
      memberId: e.payload.memberId,
      leaderId: e.payload.leaderId,
      isLeader: e.payload.isLeader,
      groupProtocol: e.payload.groupProtocol,
      memberAssignment: e.payload.memberAssignment,
    }
  })
  const crashes = []
  consumer.on(consumer.events.CRASH, e => crashes.push(String(e.payload.error)))

  const records = []
  let resolveDone
  const done = new Promise(resolve => {
    resolveDone = resolve
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      let next = null
      for (const m of batch.messages) {
        records.push({
          partition: batch.partition,
          offset: m.offset,
          key: b64(m.key),
          value: b64(m.value),
          headers: Object.fromEntries(Object.entries(m.headers || {}).map(([k, v]) => [k, b64(v)])),
          timestamp: m.timestamp,
        })
        next = (BigInt(m.offset) + 1n).toString()
      }
      if (next !== null) {
        // Commit after handling, before the next batch.
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }])
      }
      await heartbeat()
      if (records.length >= EXPECTED) resolveDone()
    },
  })

  let timer
  await Promise.race([
    done,
    new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`only ${records.length} of ${EXPECTED} records within 60s; crashes: ${crashes}`)),
        60000
      )
    }),
  ])
  clearTimeout(timer)

  const desc = await consumer.describeGroup()
  const describe = {
    groupId: desc.groupId,
    state: desc.state,
    protocolType: desc.protocolType,
    protocol: desc.protocol,
    errorCode: desc.errorCode,
    members: desc.members.map(m => {
      const a = AssignerProtocol.MemberAssignment.decode(m.memberAssignment)
      return { memberId: m.memberId, clientId: m.clientId, assignment: a ? a.assignment : null }
    }),
  }
  const committedBeforeLeave = offsetsMap(await admin.fetchOffsets({ groupId, topics: [topic] }))
  await consumer.disconnect()
  const committedAfterLeave = offsetsMap(await admin.fetchOffsets({ groupId, topics: [topic] }))
  await admin.disconnect()
  return { records, join, describe, committedBeforeLeave, committedAfterLeave, crashes }
}

const overall = setTimeout(() => {
  process.stderr.write('group_consume.js: overall timeout (120s)\n')
  process.exit(4)
}, 120000)

main()
  .then(out => {
    clearTimeout(overall)
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0))
  })
  .catch(e => {
    process.stderr.write('group_consume.js failed: ' + (e && e.stack ? e.stack : String(e)) + '\n')
    process.exit(1)
  })
