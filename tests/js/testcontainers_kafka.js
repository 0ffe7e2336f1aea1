// @testcontainers/kafka's KafkaContainer in its ZooKeeper mode on zkbroker's image, used by
// kafkajs. Run by tests/docker/test_kafka_images.py:
// `node testcontainers_kafka.js <image> <docker network>`, with $ZKBROKER_TEST_LABELS (JSON)
// as the container's labels; prints one JSON object ({ readyMs, consumed }), exits non-zero
// on a failed step. The container is stopped in every case.
const { KafkaContainer } = require('@testcontainers/kafka')
const { Kafka, logLevel } = require('kafkajs')

async function roundTrip (brokers) {
  const kafka = new Kafka({ clientId: 'zkbroker-tc-node', brokers, logLevel: logLevel.NOTHING })
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 'tc-node', acks: -1, messages: [0, 1, 2].map(i => ({ value: `n${i}` })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: 'tc-node-group' })
  await consumer.connect()
  await consumer.subscribe({ topic: 'tc-node', fromBeginning: true })
  const consumed = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${consumed.length} of 3`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        consumed.push(message.value.toString())
        if (consumed.length === 3) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return consumed
}

async function main () {
  const [image, network] = process.argv.slice(2)
  const labels = JSON.parse(process.env.ZKBROKER_TEST_LABELS || '{}')
  const started = Date.now()
  const container = await new KafkaContainer(image)
    .withNetworkMode(network)
    .withLabels(labels)
    .start()
  try {
    const readyMs = Date.now() - started
    const brokers = [`${container.getHost()}:${container.getMappedPort(9093)}`]
    const consumed = await roundTrip(brokers)
    process.stdout.write(JSON.stringify({ readyMs, consumed }) + '\n')
  } finally {
    await container.stop()
  }
}

main().catch(err => { console.error(err); process.exit(1) })
