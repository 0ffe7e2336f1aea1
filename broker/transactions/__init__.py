"""The transaction coordinator as the broker runs it (KIP-98; docs/kafka-behaviour.md §17).

`coordinator` is one broker's coordinator (the ``__transaction_state`` partitions it leads, as a
coordinator runtime, and its timers); `transaction_log_codec` and `loading` are what it keeps
in that log and how a partition is replayed; `marker_writer` sends COMMIT/ABORT markers (directly
to a broker of this process, `local_brokers`, or WriteTxnMarkers over `peer_client`); `markers`
is what a partition leader does with one; `verify_sender` asks a coordinator in another process
whether partitions are in a transaction (KIP-890); `config` reads its broker configs.

Deliberately not here: the decisions (``zkbroker.broker.rules.transactions``).
"""
