"""Helpers shared by several API handlers, that need a `RequestContext`: config resources and
alterations, group coordination checks.

Pure rules go to `zkbroker.broker.rules`; ZooKeeper recipes to `zkbroker.zk_layout.store`. Nothing
here imports `zkbroker.handlers.registry` or an API module.
"""
