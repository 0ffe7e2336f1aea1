"""The metadata image: what this process knows of the cluster (brokers, topics, partition
states, controller, configs), read by handlers without touching ZooKeeper.

`metadata_image` is the image itself (the one mutable store of metadata in the process,
changed only through its publish methods); `metadata_watcher` and `config_watcher` keep it
current from ZooKeeper watches. The controller publishes what it writes, as Kafka's
UpdateMetadata does.
"""
