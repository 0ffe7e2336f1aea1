"""The toolkit's request hooks, plugged into the listener's extension point
(`zkbroker.broker.server.hooks.HookChain`): fault injection kept in ZooKeeper (`faults`), request
capture to memory and JSON Lines (`capture`), and StatsD metrics (`metrics`).

Deliberately not here: the hook chain itself (it belongs to the listener it extends) and any
request handling.
"""
