// kafkajs against a zkbroker cluster: admin offsets, produce, a consumer group, group admin.
// Run by tests/integration/test_kafkajs.py: `node checks.js <bootstrap> <topic> <group>`;
// prints one JSON object with what each step saw, exits non-zero on a failed step.
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, group] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'zkbroker-kafkajs',
    brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 100 }
  })
  const seen = {}
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }], waitForLeaders: true })

  const producer = kafka.producer()
  await producer.connect()
  const sent = await producer.send({
    topic,
    acks: -1,
    messages: [0, 1, 2, 3, 4, 5].map(i => ({ partition: i % 2, key: `k${i}`, value: `v${i}` }))
  })
  seen.produced = sent.map(r => [r.partition, Number(r.baseOffset)]).sort()
  await producer.disconnect()

  seen.topicOffsets = (await admin.fetchTopicOffsets(topic))
    .map(p => [p.partition, Number(p.low), Number(p.high)]).sort()

  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${values.length} of 6`)), 30000)
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(message.value.toString())
        if (values.length === 6) { clearTimeout(timer); resolve() }
      }
    }).catch(reject)
  })
  seen.consumed = values.sort()
  await consumer.commitOffsets([{ topic, partition: 0, offset: '3' }, { topic, partition: 1, offset: '3' }])
  const described = await admin.describeGroups([group])
  seen.described = described.groups.map(g => [g.groupId, g.state, g.protocolType, g.members.length])
  seen.listed = (await admin.listGroups()).groups.map(g => g.groupId).filter(g => g === group)
  await consumer.disconnect()

  const fetched = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  seen.committed = fetched[0].partitions.map(p => [p.partition, Number(p.offset)]).sort()
  await admin.resetOffsets({ groupId: group, topic, earliest: true })
  const reset = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  seen.reset = reset[0].partitions.map(p => [p.partition, Number(p.offset)]).sort()
  await admin.deleteGroups([group])
  seen.afterDelete = (await admin.listGroups()).groups.map(g => g.groupId).filter(g => g === group)
  await admin.disconnect()
  process.stdout.write(JSON.stringify(seen))
}

main().catch(e => { process.stderr.write(String(e && e.stack || e)); process.exit(1) })
