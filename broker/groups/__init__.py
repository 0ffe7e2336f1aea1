"""Consumer groups as the broker runs them: the classic group coordinator (`coordinator`: the
``__consumer_offsets`` partitions it leads, as a coordinator runtime, docs/kafka-behaviour.md
§16) and the ZooKeeper (0.8 consumer) registry (`zk_registry`: `/consumers/<group>/...`).

Deliberately not here: the coordinator's decisions (``zkbroker.broker.rules.groups``), request
handling (``zkbroker.handlers``), ConsumerProtocol subscriptions
(``zkbroker.broker.protocol.consumer_protocol``).
"""
