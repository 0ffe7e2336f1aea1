"""One broker: its TCP listener (`listener`: socket I/O, dispatch to `handlers.registry`,
per-connection order), its lifecycle, ZooKeeper session and registration (`broker_node`), and
the request-hook extension point the toolkit plugs into (`hooks`).

Framing decisions are pure code in `broker.protocol.framing`; what an answer contains is
`handlers`.
"""
