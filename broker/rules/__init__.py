"""Kafka's rules as pure code: no I/O, no asyncio, no ZooKeeper.

- `api_error`: errors a handler raises to answer an item with a code and message;
- `topic_names`, `replica_assignment`, `leader_election`: topic name rules, AdminUtils'
  replica assignment, the controller's leader and ISR choices;
- `config_def`, `config_catalog`: the value engine of configs, and the topic config keys of
  every release with their validation;
- `broker_config_types`, `broker_config_table`, `broker_config_catalog`,
  `broker_config_validation`: the broker config keys of every release, their lookups and the
  rules of dynamic updates;
- `config_documentation` (over `topic_config_docs` and the `broker_config_docs_*` groups):
  our own documentation of each config;
- `broker_config`, `broker_loggers`: the layered broker config and log4j logger levels;
- `jvm_collections`: the iteration orders and renderings of Java/Scala collections that
  Kafka's answers and messages expose;
- `acl_operations`: authorized-operations bit sets.

Everything above (handlers, controller, settings) decides with these; nothing here imports
them.
"""
