"""Benchmark: encode a large MetadataResponse v12 with zkbroker's codec and with kafka-python's.

Run from the repo root: ``.venv/bin/python bench/codec.py``. Builds the same response (3 brokers,
N topics x 3 partitions, leader epochs, replicas/ISR of 3, topic ids) with both libraries,
checks that both produce identical bytes, then times ``encode`` only (best of several runs,
objects built beforehand, garbage collector paused during each run) and prints a table with the
speed-up against the 3x target. Decode times are printed for information.

Deliberately not a test: timings vary by machine, so nothing here asserts; it exits 1 only if
the bytes differ or the target is missed on the large case.
"""

from __future__ import annotations

import gc
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka.protocol.metadata import MetadataRequest as KpMetadataRequest
from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse

from zkbroker.broker.protocol import decode_message, encode_message
from zkbroker.broker.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

VERSION = 12
SIZES = (1_000, 10_000)
PARTITIONS = 3
BROKERS = 3
TARGET = 3.0
DOMAINS = ("payments", "orders", "inventory", "shipping", "customers", "analytics", "audit")
EVENTS = ("created", "updated", "deleted", "snapshot", "dlq", "retry")
NO_OPERATIONS = -(2**31)  # Kafka's "authorized operations not requested"


def topic_name(i: int) -> str:
    return f"{DOMAINS[i % len(DOMAINS)]}.{EVENTS[(i // 7) % len(EVENTS)]}.v{i % 4 + 1}-{i:05d}"


def replicas(t: int, p: int) -> list[int]:
    first = (t + p) % BROKERS
    return [(first + k) % BROKERS for k in range(3)]


def build_zkbroker(n: int) -> MetadataResponse:
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            MetadataResponseBroker(
                node_id=b, host=f"kafka-{b}.kafka.svc.cluster.local", port=9092, rack=f"rack-{b}"
            )
            for b in range(BROKERS)
        ],
        cluster_id="lkc-7q9mZxQ2RjW0TPhB1vY0mA",
        controller_id=1,
        topics=[
            MetadataResponseTopic(
                error_code=0,
                name=topic_name(t),
                topic_id=uuid.UUID(int=(t + 1) * 0x9E3779B97F4A7C15),
                is_internal=False,
                partitions=[
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=replicas(t, p)[0],
                        leader_epoch=(t * 7 + p) % 40,
                        replica_nodes=replicas(t, p),
                        isr_nodes=replicas(t, p),
                        offline_replicas=[],
                    )
                    for p in range(PARTITIONS)
                ],
                topic_authorized_operations=NO_OPERATIONS,
            )
            for t in range(n)
        ],
    )


def build_kafka_python(n: int) -> Any:
    broker_cls = KpMetadataResponse.MetadataResponseBroker
    topic_cls = KpMetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    return KpMetadataResponse(
        throttle_time_ms=0,
        brokers=[
            broker_cls(
                node_id=b, host=f"kafka-{b}.kafka.svc.cluster.local", port=9092, rack=f"rack-{b}"
            )
            for b in range(BROKERS)
        ],
        cluster_id="lkc-7q9mZxQ2RjW0TPhB1vY0mA",
        controller_id=1,
        topics=[
            topic_cls(
                error_code=0,
                name=topic_name(t),
                topic_id=uuid.UUID(int=(t + 1) * 0x9E3779B97F4A7C15),
                is_internal=False,
                partitions=[
                    partition_cls(
                        error_code=0,
                        partition_index=p,
                        leader_id=replicas(t, p)[0],
                        leader_epoch=(t * 7 + p) % 40,
                        replica_nodes=replicas(t, p),
                        isr_nodes=replicas(t, p),
                        offline_replicas=[],
                    )
                    for p in range(PARTITIONS)
                ],
                # kafka-python models this int32 as a bit set; None is Kafka's -2**31 default.
                authorized_operations=None,
            )
            for t in range(n)
        ],
    )


def best_ms(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best * 1000


def main() -> int:
    ok = True
    rows = []
    for n in SIZES:
        ours = build_zkbroker(n)
        theirs = build_kafka_python(n)
        ours_bytes = encode_message(ours, VERSION)  # also compiles the encoder
        theirs_bytes = bytes(theirs.encode(version=VERSION))
        same = ours_bytes == theirs_bytes
        ok &= same
        ours_ms = theirs_ms = float("inf")
        # Alternate the two so that a noisy neighbour slows both alike; keep the best of each.
        for _ in range(20 if n <= 1_000 else 7):
            ours_ms = min(ours_ms, best_ms(partial(encode_message, ours, VERSION), 1))
            theirs_ms = min(theirs_ms, best_ms(partial(theirs.encode, version=VERSION), 1))
        rows.append((n, len(ours_bytes), same, ours_ms, theirs_ms))

    print(f"MetadataResponse v{VERSION} encode, {BROKERS} brokers, {PARTITIONS} partitions/topic")
    print(
        f"{'topics':>7} {'bytes':>10} {'same bytes':>10} {'zkbroker ms':>12} "
        f"{'kafka-python ms':>16} {'speed-up':>9} {'>= 3x':>6}"
    )
    for n, size, same, ours_ms, theirs_ms in rows:
        speedup = theirs_ms / ours_ms
        met = speedup >= TARGET
        if n == max(SIZES):
            ok &= met
        print(
            f"{n:>7} {size:>10} {'yes' if same else 'NO':>10} {ours_ms:>12.2f} "
            f"{theirs_ms:>16.2f} {speedup:>8.2f}x {'yes' if met else 'NO':>6}"
        )

    print()
    print("Decode, for information (best of several runs)")
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=topic_name(t)) for t in range(100)],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    request_bytes = encode_message(request, VERSION)
    decoded_request, _ = decode_message(MetadataRequest, VERSION, request_bytes)
    assert decoded_request == request
    kp_request = KpMetadataRequest(
        topics=[KpMetadataRequest.MetadataRequestTopic(name=topic_name(t)) for t in range(100)],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    if bytes(kp_request.encode(version=VERSION)) != request_bytes:
        print("  note: kafka-python encodes the MetadataRequest differently")
    response = build_zkbroker(max(SIZES))
    response_bytes = encode_message(response, VERSION)
    decoded_response, _ = decode_message(MetadataResponse, VERSION, response_bytes)
    assert decoded_response == response
    cases = [
        (
            "MetadataRequest v12, 100 topics",
            len(request_bytes),
            best_ms(partial(decode_message, MetadataRequest, VERSION, request_bytes), 50),
            best_ms(partial(KpMetadataRequest.decode, request_bytes, version=VERSION), 50),
        ),
        (
            f"MetadataResponse v12, {max(SIZES)} topics",
            len(response_bytes),
            best_ms(partial(decode_message, MetadataResponse, VERSION, response_bytes), 5),
            best_ms(partial(KpMetadataResponse.decode, response_bytes, version=VERSION), 5),
        ),
    ]
    print(f"{'message':<36} {'bytes':>10} {'zkbroker ms':>12} {'kafka-python ms':>16}")
    for label, size, ours_ms, theirs_ms in cases:
        print(f"{label:<36} {size:>10} {ours_ms:>12.3f} {theirs_ms:>16.3f}")

    if not ok:
        print("\nFAILED: bytes differ or the 3x encode target is missed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
