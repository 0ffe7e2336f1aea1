"""Transactional produce throughput: zkbroker beside librdkafka's built-in mock cluster, driven
by the same confluent-kafka transactional producer in one run.

- The baseline is librdkafka's mock cluster (`test.mock.num.brokers=3`, which has a transaction
  coordinator); zkbroker runs as `zkbroker run --brokers 3 --kafka-version 3.9` in its own
  process (both from bench/data_plane.py).
- One producer per target (`transactional.id`, `init_transactions` outside the time), then
  `--transactions` transactions of `--records` 1 KB records each to partition 0 of a fresh topic,
  timed from the first `begin_transaction()` to the last `commit_transaction()` returning: each
  transaction pays AddPartitionsToTxn, the produce, EndTxn and the markers (zkbroker's
  coordinator answers EndTxn once PrepareCommit is written, as Kafka does; the next transaction
  waits for CONCURRENT_TRANSACTIONS to clear, also as against Kafka).

Target: transactional produce throughput (100-record transactions) >= 0.5x the mock's.
Run: python bench/transactions.py [--transactions N] [--records R]
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Producer
from data_plane import RECORD, _ensure_topic, _load, mock_cluster, zkbroker

TOPIC = "bench-txn"


def transactional_throughput(bootstrap: str, transactions: int, records: int) -> float:
    """Records per second over `transactions` committed transactions of `records` records."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{time.monotonic_ns()}",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    start = time.perf_counter()
    for _ in range(transactions):
        producer.begin_transaction()
        for _ in range(records):
            while True:
                try:
                    producer.produce(TOPIC, RECORD, partition=0)
                    break
                except BufferError:
                    producer.poll(0.01)
        producer.commit_transaction(60)
    elapsed = time.perf_counter() - start
    return transactions * records / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", type=int, default=50)
    parser.add_argument("--records", type=int, default=100, help="records per transaction")
    args = parser.parse_args()

    results: dict[str, float] = {}
    print(f"start: {_load()} (2 cores shared: figures move with it)", flush=True)
    for name, target in (("librdkafka mock", mock_cluster), ("zkbroker", zkbroker)):
        with target() as (bootstrap, _pid):
            _ensure_topic(bootstrap, TOPIC)
            rate = transactional_throughput(bootstrap, args.transactions, args.records)
            results[name] = rate
        print(
            f"{name:<16} {args.transactions} transactions of {args.records} records: "
            f"{rate:>9,.0f} rec/s ({rate / args.records:7.1f} transactions/s)",
            flush=True,
        )
    ratio = results["zkbroker"] / results["librdkafka mock"]
    print(f"  transactional produce >= 0.5x   {ratio:5.2f}x  {'met' if ratio >= 0.5 else 'MISSED'}")
    print(f"end: {_load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
