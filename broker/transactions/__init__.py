"""The transaction coordinator (KIP-98; docs/kafka-behaviour.md §17).

`coordinator` is one broker's coordinator (the asyncio shell: partitions of
``__transaction_state`` it leads, loading, appends, timers); `records` and `loading` are what it
keeps in that log and how a partition is replayed; `marker_writer` sends COMMIT/ABORT markers to
every partition of a transaction (directly to a broker of this process, `local_brokers`, or
WriteTxnMarkers over `peer_client`); `config` reads its broker configs. The decisions are pure
code in ``zkbroker.broker.rules.transaction_state`` and
``zkbroker.broker.rules.transaction_decisions``; what a partition leader does with a marker is
``zkbroker.broker.transactions.markers`` (the data plane's).
"""
