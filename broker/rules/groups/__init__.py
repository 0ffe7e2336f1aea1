"""The classic group coordinator's decisions, as pure code (docs/kafka-behaviour.md §16).

`state_machine` is the object the coordinator and the handlers call; it is both `membership`
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup: Kafka's GroupMetadataManager side) and `offsets`
(OffsetCommit, OffsetFetch, expiry: the OffsetMetadataManager side), each defining its calls.
`classic_group` is one group's state, `txn_offsets` its pending transactional commits, `config`
the broker configs read, and `offsets_topic_codec` the keys and values of ``__consumer_offsets``.

Deliberately not here: partitions, loading and appending (``zkbroker.broker.groups.coordinator``
over ``zkbroker.broker.coordinator_runtime``), request handling (``zkbroker.handlers``).
"""
