"""Helpers shared by several API handlers, that need a `RequestContext`: config resources and
alterations, group coordination checks.

Pure rules go to `broker.rules`; ZooKeeper recipes to `zk_layout.store`. Nothing here imports
`handlers.registry` or an API module.
"""
