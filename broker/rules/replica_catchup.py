"""How long a replica the controller starts takes to catch up and join the ISR.

zkbroker replicates nothing (every replica reads the one log), so the time a follower needs to
fetch the leader's log is played by a delay: by default a floor plus the partition's bytes at a
follower's fetch rate, so a reassignment or a returning broker is in flight long enough for a
client to see it (ListPartitionReassignments, ISRs in Metadata), as against Kafka.
`--replica-catchup-ms N` sets a fixed delay instead; 0 joins at once.
"""

from __future__ import annotations

# The shortest catch-up: a few of a follower's fetch round trips (replica.fetch.wait.max.ms is
# 500), long enough for a client that lists reassignments right after starting one.
CATCHUP_FLOOR_MS = 300
# Bytes a follower copies per millisecond: 100 MiB/s, a replica fetcher on a local network.
CATCHUP_BYTES_PER_MS = 100 * 1024 * 1024 // 1000


def catchup_ms(partition_bytes: int, fixed_ms: int | None) -> int:
    """The delay for one partition: `fixed_ms` when set, else the floor plus its bytes at the
    fetch rate."""
    if fixed_ms is not None:
        return fixed_ms
    return CATCHUP_FLOOR_MS + max(partition_bytes, 0) // CATCHUP_BYTES_PER_MS
