"""Consumer groups as the broker sees them: the classic group coordinator (`coordinator`, with
its pure `state_machine` over `membership` and `offsets`, with `classic_group`, `config`,
`txn_offsets` and the `__consumer_offsets` `records`; docs/kafka-behaviour.md §16) and the
ZooKeeper (0.8 consumer) registry (`zk_registry`: `/consumers/<group>/{ids,owners,offsets}`),
read and written for the group APIs.

Deliberately not here: the group APIs' request handling (`handlers`), the wire format of
ConsumerProtocol subscriptions (`zkbroker.broker.protocol.consumer_protocol`).
"""
