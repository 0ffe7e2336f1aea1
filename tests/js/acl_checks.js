// kafkajs' admin ACL API against zkbroker with AclAuthorizer (PLAINTEXT, the client a super
// user). Run by tests/integration/test_acls_kafkajs.py: `node acl_checks.js <bootstrap>`;
// prints one JSON object.
const {
  Kafka, logLevel, AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes
} = require('kafkajs')

async function main () {
  const [bootstrap] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'zkbroker-kafkajs-acls',
    brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 }
  })
  const admin = kafka.admin()
  await admin.connect()
  const acl = {
    resourceType: AclResourceTypes.TOPIC,
    resourceName: 'js-',
    resourcePatternType: ResourcePatternTypes.PREFIXED,
    principal: 'User:js',
    host: '*',
    operation: AclOperationTypes.WRITE,
    permissionType: AclPermissionTypes.ALLOW
  }
  const seen = {}
  seen.created = await admin.createAcls({ acl: [acl] })
  const filter = {
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY
  }
  seen.described = (await admin.describeAcls(filter)).resources
  seen.matched = (await admin.describeAcls({
    ...filter, resourceType: AclResourceTypes.TOPIC, resourceName: 'js-orders', resourcePatternType: ResourcePatternTypes.MATCH
  })).resources.length
  seen.deleted = (await admin.deleteAcls({ filters: [filter] })).filterResponses
  seen.after = (await admin.describeAcls(filter)).resources
  await admin.disconnect()
  process.stdout.write(JSON.stringify(seen))
}

main().catch(e => { console.error(e); process.exit(1) })
