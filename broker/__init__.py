"""zkbroker.broker: the server, the controller, the coordinators, the CLI and the toolkit.

Users import `zkbroker` (its `Cluster`), not this package; "Layers" in docs/design.md maps the
folders below.
"""
