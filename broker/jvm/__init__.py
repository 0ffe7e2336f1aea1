"""What zkbroker's JVMs (the embedded ZooKeeper, the report's Spark) share: the class-data
archive kept between runs (`class_archive`).

Not here: how each JVM is started (`zkbroker.broker.zookeeper.jvm_launch`,
`zkbroker.broker.report.session`).
"""
