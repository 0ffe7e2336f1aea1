"""Consumer groups as the broker sees them: today the ZooKeeper (0.8 consumer) registry
(`zk_registry`: `/consumers/<group>/{ids,owners,offsets}`) read and written for the group APIs.

Deliberately not here: the group APIs' request handling (`handlers`), the wire format of
ConsumerProtocol subscriptions (`broker.protocol.consumer_protocol`).
"""
