"""The transaction coordinator's room (KIP-98): what it keeps in ``__transaction_state``.

Today the record codec (`broker.transactions.records`) and replaying a partition of the log
(`broker.transactions.loading`); the state machine and the coordinator's decisions are pure
code in ``broker.rules.transaction_state`` and ``broker.rules.transaction_decisions``. Nothing
here is wired to the wire APIs yet (docs/kafka-behaviour.md §17).
"""
