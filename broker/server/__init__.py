"""One broker: its TCP listener (`listener`: socket I/O, dispatch to `zkbroker.handlers.registry`,
per-connection order), its lifecycle, ZooKeeper session and registration (`broker_node`), and
the request-hook extension point the toolkit plugs into (`hooks`).

Framing decisions are pure code in `zkbroker.broker.protocol.framing`; what an answer contains is
`handlers`.
"""
