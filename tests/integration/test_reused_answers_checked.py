"""The reused-answer check (`ZKBROKER_CHECK_REUSED_ANSWERS`, request_pipeline's testing aid) and
the suite running the way users run: real clients get reused Metadata and ApiVersions answers,
each compared with an answer built afresh, and a kept answer that differs fails the test that
met it (tests/conftest.py's `_reused_answers_checked`), naming both byte strings."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from zkbroker import Cluster
from zkbroker.broker.log import ROOT_LOGGER
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.server import request_pipeline
from zkbroker.broker.server.request_pipeline import (
    CHECK_REUSED_ANSWERS_ENV,
    REUSE_CHECKS,
    RequestPipeline,
)
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import TEST_ZOOKEEPER_ENV, ZooKeeperEndpoint

REPO = Path(__file__).resolve().parents[2]


def test_the_suite_checks_reused_answers_at_info() -> None:
    assert request_pipeline.check_reused_answers()
    # No level of zkbroker's own: the suite's (pytest's log_level, INFO) applies, and at INFO
    # answers are reused.
    assert logging.getLogger(ROOT_LOGGER).level == logging.NOTSET
    assert not logging.getLogger(ROOT_LOGGER).isEnabledFor(logging.DEBUG)


def test_a_real_client_gets_reused_answers_and_each_is_checked(
    cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = cluster_factory(broker_ids=(0,))
    config = {"bootstrap.servers": cluster.bootstrap_servers, "client.id": "reuse-check"}
    admin = AdminClient(config)
    futures = admin.create_topics([NewTopic("reused", num_partitions=2, replication_factor=1)])
    futures["reused"].result(timeout=30)
    before, mismatches = dict(REUSE_CHECKS.compared), len(REUSE_CHECKS.mismatches)

    def reused(api: ApiKey) -> int:
        return REUSE_CHECKS.compared.get(api, 0) - before.get(api, 0)

    deadline = time.monotonic() + 30
    # The same Metadata request (every topic) again and again; then new connections, each
    # starting with the same ApiVersions request. (A change of the image, the topic's
    # leaders settling, drops the kept answers: the next request is answered afresh.)
    while reused(ApiKey.METADATA) < 3 or reused(ApiKey.API_VERSIONS) < 1:
        assert time.monotonic() < deadline, REUSE_CHECKS.compared
        assert "reused" in admin.list_topics(timeout=30).topics
        assert "reused" in AdminClient(config).list_topics(timeout=30).topics
    assert len(REUSE_CHECKS.mismatches) == mismatches


@pytest.fixture
def corrupted_kept_answers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every answer kept for reuse has its last byte flipped (the bug the check is for)."""
    keep = RequestPipeline._keep_answer

    def keep_corrupted(self: RequestPipeline, key: Any, *args: Any) -> None:
        keep(self, key, *args)
        kept = self._answers.get(key)
        if kept is not None:
            body = kept.body[:-1] + bytes([kept.body[-1] ^ 0xFF])
            self._answers[key] = dataclasses.replace(kept, body=body)

    monkeypatch.setattr(RequestPipeline, "_keep_answer", keep_corrupted)
    yield


def test_a_kept_answer_that_differs_is_found_and_the_client_still_gets_it(
    cluster_factory: Callable[..., Cluster], corrupted_kept_answers: None
) -> None:
    cluster = cluster_factory(broker_ids=(0,))
    request = MetadataRequest(topics=[])
    before = len(REUSE_CHECKS.mismatches)
    try:
        with WireClient.to(cluster.bootstrap_servers) as client:
            deadline = time.monotonic() + 30
            while len(REUSE_CHECKS.mismatches) == before:  # the first answer is kept, then...
                assert time.monotonic() < deadline
                client.send_raw(client.frame(ApiKey.METADATA, 12, request)[1])
                answer = client.recv_frame()
        found = REUSE_CHECKS.mismatches[before:]
    finally:
        del REUSE_CHECKS.mismatches[before:]  # this test's own: not a failure of it
    (mismatch,) = found
    assert (mismatch.api_key, mismatch.api_version, mismatch.broker_id) == (3, 12, 0)
    # The client got the kept answer (after its correlation id and v12's header tags), whose
    # last byte differs from the fresh one's, as corrupted.
    assert answer[5:] == mismatch.kept
    assert mismatch.kept[:-1] == mismatch.fresh[:-1] and mismatch.kept != mismatch.fresh
    assert mismatch.first_difference == len(mismatch.kept) - 1
    text = mismatch.describe()
    assert mismatch.kept.hex() in text and mismatch.fresh.hex() in text


def test_a_difference_fails_the_test_that_met_it(
    zookeeper: ZooKeeperEndpoint, tmp_path: Path
) -> None:
    # A test of someone's run of the suite, corrupting the kept answers without taking the
    # finding back: the suite's autouse fixture must fail it, naming both byte strings.
    test_file = tmp_path / "test_corrupt.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import time

            from tests.integration.test_reused_answers_checked import corrupted_kept_answers
            from zkbroker.broker.protocol.messages.metadata import MetadataRequest
            from zkbroker.broker.toolkit.wire import WireClient


            def test_meets_a_bad_reused_answer(zk_cluster_factory, corrupted_kept_answers):
                cluster = zk_cluster_factory(brokers=1)
                with WireClient.to(cluster.bootstrap_servers) as client:
                    for _ in range(30):  # one reused answer at least, the image settling
                        # Raw: the corrupted answer would not decode, and the client's
                        # failure is not what this test is about.
                        client.send_raw(client.frame(3, 9, MetadataRequest(topics=[]))[1])
                        client.recv_frame()
                        time.sleep(0.05)
            """
        )
    )
    env = {
        **os.environ,
        TEST_ZOOKEEPER_ENV: zookeeper.connect_string.partition("/")[0],
        "PYTHONPATH": str(REPO),
    }
    env.pop(CHECK_REUSED_ANSWERS_ENV, None)  # tests/conftest.py sets it
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
            "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path), str(test_file),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env=env,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-4000:]
    assert "1 passed, 1 error" in output, output[-4000:]
    assert "reused answer(s) differ from the answer built afresh" in output, output[-4000:]
    assert "a reused METADATA v9 answer differs" in output
    assert "kept  (" in output and "fresh (" in output
