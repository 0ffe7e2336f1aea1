"""Mutation fuzzing: valid requests of every API and version with bytes flipped, truncated,
extended, counts inflated and length fields bombed, pipelined over real sockets to a real
cluster on a real ZooKeeper.

Per frame (`frames.run_fuzz`): a frame Kafka answers gets one decodable answer with its
correlation id, in order; one Kafka closes on closes the connection unanswered
(docs/kafka-behaviour.md §0). Per run: no traceback or `request.failed` in the broker log, the
health client's Metadata answered within 1 s throughout, and this process's RSS (the brokers
run in it) within +50 MB. Frames are built and checked in a spawned process; the budget is in
conftest.py.

Not here: structured requests (`test_structured.py`), hostile clients (`test_hostile.py`).
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest

from tests.robustness.conftest import FIGURES, FRAMES, LONG, SEED, target
from tests.robustness.frames import FuzzPlan, run_fuzz, served_pairs
from tests.robustness.probes import HealthMonitor, LogWatch, quiet_handlers, rss_bytes
from zkbroker import Cluster

pytestmark = [pytest.mark.robustness, pytest.mark.integration]

RSS_BUDGET = 50 * 1024 * 1024
WARM_UP_FRAMES = 3_000
MiB = 1024 * 1024


@pytest.mark.timeout(6 * 3600 if LONG else 300)
def test_mutated_frames(fuzz_cluster: Cluster, log_watch: LogWatch) -> None:
    host, port = target(fuzz_cluster)
    health = HealthMonitor(host, port).start()
    context = multiprocessing.get_context("spawn")
    try:
        # The broker logs a warning per close; LogWatch still sees every record.
        with quiet_handlers(), ProcessPoolExecutor(1, mp_context=context) as pool:
            # Warm-up: the codec compiles each (message, version) on first use, the image
            # and the logger caches fill; the RSS budget is for what the run adds after.
            pool.submit(run_fuzz, FuzzPlan(host, port, SEED ^ 0x5EED, WARM_UP_FRAMES)).result()
            rss_before = rss_bytes()
            plan = FuzzPlan(host, port, SEED, FRAMES, progress_every=100_000 if LONG else 0)
            report = pool.submit(run_fuzz, plan).result()
    finally:
        health.stop()
    rss_after = rss_bytes()
    figures = health.figures()
    failures = log_watch.take()
    FIGURES.extend(report.lines())
    FIGURES.append(figures.line())
    FIGURES.append(
        f"RSS: {rss_before / MiB:.1f} MiB before, {rss_after / MiB:.1f} MiB after "
        f"({(rss_after - rss_before) / MiB:+.1f} MiB); "
        f"{len(failures)} broker log failures, {log_watch.warnings} warnings"
    )

    assert report.anomaly_count == 0, report.anomalies
    assert failures == [], failures
    assert health.failures == [], health.failures[:20]
    assert rss_after - rss_before <= RSS_BUDGET
    assert report.frames >= FRAMES
    # Every API and version the cluster serves got mutated frames (seeds drawn uniformly).
    assert set(served_pairs()) <= set(report.per_version)
