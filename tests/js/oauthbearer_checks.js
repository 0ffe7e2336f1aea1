// kafkajs over SASL/OAUTHBEARER against zkbroker: a topic created with a good token, and the
// error for a refused one. Run by tests/integration/test_security_oauthbearer.py:
// `node oauthbearer_checks.js <bootstrap> <good token> <bad token> <topic>`; prints one JSON object.
const { Kafka, logLevel } = require('kafkajs')

function client (bootstrap, token) {
  return new Kafka({
    clientId: 'zkbroker-kafkajs-oauthbearer',
    brokers: bootstrap.split(','),
    logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
    sasl: { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: token }) },
    retry: { retries: 0 }
  })
}

async function main () {
  const [bootstrap, good, bad, topic] = process.argv.slice(2)
  const seen = {}
  const admin = client(bootstrap, good).admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
  seen.topics = (await admin.listTopics()).filter(t => t === topic)
  await admin.disconnect()
  const refused = client(bootstrap, bad).admin()
  try {
    await refused.connect()
    seen.bad = 'connected'
  } catch (e) {
    seen.bad = [e.name, e.message]
  }
  process.stdout.write(JSON.stringify(seen))
}

main().catch(e => { console.error(e); process.exit(1) })
