"""The transaction coordinator's decisions, as pure code (KIP-98; docs/kafka-behaviour.md §17).

`state` is one transactional id's state machine (Kafka's TransactionMetadata and its
transitions); `decisions` answers each transaction API from that state and the request.

Deliberately not here: partitions, loading, appends and markers (``zkbroker.broker.transactions``),
producer state of a partition's log (``zkbroker.broker.rules.producer_state``).
"""
