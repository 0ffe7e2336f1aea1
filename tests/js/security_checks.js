// kafkajs against a secured zkbroker listener: SASL_SSL with SCRAM-SHA-512 and PLAIN, and a
// wrong password. Run by tests/integration/test_security_kafkajs.py:
// `node security_checks.js <bootstrap> <ca.pem> <user> <password>`; prints one JSON object.
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

function client (bootstrap, ca, mechanism, username, password) {
  return new Kafka({
    clientId: 'zkbroker-kafkajs-security',
    brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING,
    ssl: { ca: [fs.readFileSync(ca, 'utf-8')] },
    sasl: { mechanism, username, password },
    retry: { retries: 0 }
  })
}

async function main () {
  const [bootstrap, ca, user, password] = process.argv.slice(2)
  const seen = {}
  for (const mechanism of ['scram-sha-512', 'plain']) {
    const admin = client(bootstrap, ca, mechanism, user, password).admin()
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: `js-${mechanism}`, numPartitions: 1 }], waitForLeaders: true })
    seen[mechanism] = (await admin.listTopics()).filter(t => t === `js-${mechanism}`)
    await admin.disconnect()
  }
  const wrong = client(bootstrap, ca, 'scram-sha-512', user, 'wrong').admin()
  try {
    await wrong.connect()
    seen.wrong = 'connected'
  } catch (e) {
    seen.wrong = [e.name, e.message]
  }
  process.stdout.write(JSON.stringify(seen))
}

main().catch(e => { console.error(e); process.exit(1) })
