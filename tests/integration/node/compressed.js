// Compressed produce and consume against Sluice through kafkajs, driven by
// tests/integration/test_kafkajs.py.
//
// Usage: node compressed.js <bootstrap host:port> <existing topic>
//
// One producer sends, to partition 0, one batch per codec: GZIP (kafkajs's own, node's
// zlib), then Snappy and LZ4 through the codec packages pinned in package.json
// (kafkajs-snappy, kafkajs-lz4; @kafkajs/zstd does not build against this Node, so zstd
// is tested with kafka-python and raw batches). Then a kafkajs consumer reads the
// partition from the beginning. Prints one JSON line: each send's base offset and error
// code, and the records the consumer read (offset, key, value).

let kafkajs, SnappyCodec, LZ4Codec
try {
  kafkajs = require('kafkajs')
  SnappyCodec = require('kafkajs-snappy')
  LZ4Codec = require('kafkajs-lz4')
} catch (e) {
  process.stderr.write('kafkajs or a codec is not installed: run `npm ci` in tests/integration/node\n')
  process.exit(3)
}
const { Kafka, logLevel, CompressionTypes, CompressionCodecs, Partitioners } = kafkajs
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec

const [bootstrap, topic] = process.argv.slice(2)
if (!bootstrap || !topic) {
  process.stderr.write('usage: node compressed.js <bootstrap> <topic>\n')
  process.exit(2)
}

const CODECS = [['gzip', CompressionTypes.GZIP], ['snappy', CompressionTypes.Snappy], ['lz4', CompressionTypes.LZ4]]
const PER_BATCH = 20

function value(codec, i) {
  return JSON.stringify({ codec, i, text: 'kafkajs compresses this text '.repeat(8) })
}

async function main() {
  const kafka = new Kafka({
    clientId: 'sluice-it-kafkajs-compressed',
    brokers: bootstrap.split(','), // one broker, or a cluster's list
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    requestTimeout: 15000,
    retry: { retries: 0 },
  })
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    idempotent: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    retry: { retries: 0 },
  })
  await producer.connect()
  const sends = {}
  for (const [name, type] of CODECS) {
    const messages = []
    for (let i = 0; i < PER_BATCH; i++) messages.push({ key: name + '-' + i, value: value(name, i), partition: 0 })
    const res = await producer.send({ topic, acks: -1, compression: type, messages })
    const r = res.find(x => x.topicName === topic)
    sends[name] = { baseOffset: r.baseOffset, errorCode: r.errorCode }
  }
  await producer.disconnect()

  const want = CODECS.length * PER_BATCH
  const consumer = kafka.consumer({ groupId: 'sluice-it-compressed-' + topic, retry: { retries: 2 } })
  const records = []
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  let done
  const all = new Promise(resolve => { done = resolve })
  await consumer.run({
    eachMessage: async ({ message }) => {
      records.push([Number(message.offset), message.key.toString(), message.value.toString()])
      if (records.length >= want) done()
    },
  })
  await all
  await consumer.disconnect()
  return { sends, records }
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
