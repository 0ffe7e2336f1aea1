"""Replication (docs/kafka-behaviour.md §24): each replica keeps its own log, followers fetch
from the leader, the high watermark follows the ISR, acks=-1 waits for it, and DeleteRecords
for every live replica's log start.

- `replica_manager`: one broker's replicas (Kafka's ``ReplicaManager``): leader or follower
  per partition from the metadata image, serving followers, ISR shrink and expand, acks=-1.
- `hosted_partition`: one partition as this broker hosts it (Kafka's ``Partition``).
- `replica_state`: the leader's view of each follower and its ISR proposals; pure.
- `purgatory`: acks=-1 produce requests waiting for the high watermark, DeleteRecords for the
  low watermark.
- `fetcher`, `fetch_source`, `local_source`, `remote_source`: a follower's fetcher per leader
  broker, reaching it in process or over the inter-broker listener.
- `truncation`: where a follower truncates, per release; pure.
- `isr_writer`, `isr_propagation`: a leader's ISR change as its release writes it.
- `replica_config`, `fault_view`: the ``replica.*`` settings; what replication faults say.

Not here: the logs themselves (`zkbroker.broker.storage`), the controller's side of ISR
changes (`zkbroker.broker.controller`), the Produce and Fetch handlers' validation.
"""
