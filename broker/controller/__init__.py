"""The controller of a ZooKeeper-mode cluster (Kafka's `KafkaController`): the election and the
event loop (`controller`), topic creation and deletion (`topics`), partition states, broker
failure and return and leader elections (`partitions`), reassignments (`reassignment`), and
KIP-631 broker leases (`broker_leases`).

Every event runs on one task, in order, under a name (`controller.Event`); every write is a
ZooKeeper multi fenced by `/controller_epoch`. Kafka's pure rules it applies (leader choice,
ISR changes) are `zkbroker.broker.rules.leader_election`.
"""
