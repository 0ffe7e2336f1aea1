"""Session-wide test configuration: markers, the shared ZooKeeper, logging as a user's process
has it (DEBUG only where a test asks), the reused-answer check and the shared data beside the
repository.

Fixtures for one area of the suite belong in that directory's conftest.py;
only fixtures every area needs live here, one commented block per group.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import shared_data
from zkbroker.broker.log import ROOT_LOGGER
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot, remove_chroot

# ---------------------------------------------------------------------------
# Markers
#
# Everything under tests/integration needs a real ZooKeeper and opens sockets;
# marking it here (not per file) means `-m "not integration"` can never miss a
# test someone forgot to decorate.
# ---------------------------------------------------------------------------

_INTEGRATION_DIR = Path(__file__).parent / "integration"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)
        fixtures = getattr(item, "fixturenames", ())
        if "kafka_message_specs" in fixtures and item.get_closest_marker("needs_shared") is None:
            item.add_marker(pytest.mark.needs_shared)


# ---------------------------------------------------------------------------
# ZooKeeper
#
# `zookeeper`: one server per test session; ZKBROKER_TEST_ZOOKEEPER=host:port,
#   else a Docker container, else a local JVM (see broker/testing.py).
# `zk_connect`: that server's connect string plus a chroot of its own, so tests
#   are isolated without paying a ZooKeeper start each. The chroot znode is
#   created by whoever connects first (zkbroker's store does it itself).
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def zookeeper(zk_test_zookeeper: ZooKeeperEndpoint) -> ZooKeeperEndpoint:
    # zkbroker's own pytest plugin (zkbroker.broker.toolkit.pytest_plugin) provides the server, so
    # the plugin's fixtures (zk_cluster, zk_cluster_factory) and ours share one ZooKeeper.
    return zk_test_zookeeper


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperEndpoint) -> Iterator[str]:
    connect_string = fresh_chroot(zookeeper.connect_string)
    yield connect_string
    # Container and local servers vanish with the session; a shared external
    # ensemble would otherwise collect one chroot per test run.
    if zookeeper.kind == "external":
        remove_chroot(connect_string)


# ---------------------------------------------------------------------------
# Logging
#
# Some tests run the command's `main([...])` in this process; its `configure_logging` is the
# command's (a stderr handler on the root logger, the levels of the root, `zkbroker` and
# `kazoo`), meant for a process of its own. Each test gets the levels back afterwards and
# loses the handler, so a later test sees zkbroker's events as a user's process would.
# ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _logging_as_before() -> Iterator[None]:
    import logging

    import structlog

    from zkbroker.broker.log import ROOT_LOGGER

    loggers = [logging.getLogger(name) for name in ("", ROOT_LOGGER, "kazoo")]
    levels = [logger.level for logger in loggers]
    before = set(logging.getLogger().handlers)
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
    root = logging.getLogger()
    for handler in list(root.handlers):
        if handler not in before and isinstance(
            handler.formatter, structlog.stdlib.ProcessorFormatter
        ):
            root.removeHandler(handler)


# ---------------------------------------------------------------------------
# Logging levels
#
# zkbroker sets no level of its own (a library's manners): the suite decides, as a user's
# application does, with pytest's `log_level` (INFO, pyproject.toml), so caplog and the
# captured-log report see zkbroker's INFO events and up. DEBUG only where a test asks for it
# (`@pytest.mark.debug_logging` or the `debug_logging` fixture): at DEBUG the request pipeline
# reuses no answer, so a suite at DEBUG would never send a client the reused Metadata and
# ApiVersions answers users get.
# ---------------------------------------------------------------------------


_DEBUG_CAPLOG = pytest.StashKey[pytest.LogCaptureFixture]()


@pytest.fixture
def debug_logging(caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest) -> None:
    """zkbroker's events at DEBUG for this test: the `zkbroker` logger, and caplog's handler
    (pytest puts it back to `log_level` at each phase's start; `pytest_runtest_call` below
    lowers it again for the test's body). Restored by caplog afterwards."""
    caplog.set_level(logging.DEBUG, logger=ROOT_LOGGER)
    request.node.stash[_DEBUG_CAPLOG] = caplog


@pytest.fixture(autouse=True)
def _debug_logging_when_marked(request: pytest.FixtureRequest) -> None:
    # Autouse, so it runs before the test's clusters start: they log at DEBUG from the start.
    if request.node.get_closest_marker("debug_logging") is not None:
        request.getfixturevalue("debug_logging")


def _debug_caplog(item: pytest.Item) -> None:
    """Called from `pytest_runtest_call` (Shared data, below): caplog's handler at DEBUG for the
    body of a test that asked for DEBUG."""
    caplog = item.stash.get(_DEBUG_CAPLOG, None)
    if caplog is not None:
        caplog.handler.setLevel(logging.DEBUG)


# ---------------------------------------------------------------------------
# Reused answers, checked
#
# The request pipeline's testing aid (zkbroker.broker.server.request_pipeline): every
# Metadata or ApiVersions answer served from the kept ones is also built afresh and the bytes
# compared. On for the whole suite (set before any cluster starts; subprocesses inherit it;
# ZKBROKER_CHECK_REUSED_ANSWERS=0 turns it off); a difference fails the test during which it
# was found, with both byte strings.
# ---------------------------------------------------------------------------

os.environ.setdefault("ZKBROKER_CHECK_REUSED_ANSWERS", "1")

_PIPELINE_MODULE = "zkbroker.broker.server.request_pipeline"


@pytest.fixture(autouse=True)
def _reused_answers_checked() -> Iterator[None]:
    module = sys.modules.get(_PIPELINE_MODULE)
    before = len(module.REUSE_CHECKS.mismatches) if module is not None else 0
    yield
    module = sys.modules.get(_PIPELINE_MODULE)  # no broker ran: nothing was reused
    if module is None:
        return
    found = module.REUSE_CHECKS.mismatches[before:]
    if found:
        more = f"\n... and {len(found) - 3} more" if len(found) > 3 else ""
        pytest.fail(
            f"{len(found)} reused answer(s) differ from the answer built afresh:\n"
            + "\n".join(m.describe() for m in found[:3])
            + more,
            pytrace=False,
        )


# ---------------------------------------------------------------------------
# Shared data (tests/shared_data.py)
#
# Tests reading Kafka's message specs from ../shared are marked `needs_shared` (or take the
# `kafka_message_specs` fixture, which marks them). Without the folder they are skipped, all
# with one reason raised from one place (so `-ra` folds them into one line), and the run ends
# with one line naming the missing folder; under CI they fail instead.
# ---------------------------------------------------------------------------

_SHARED_SKIPPED: list[str] = []
_SHARED_FAILED: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    reason = _shared_missing(item)
    if reason is not None and not shared_data.under_ci():
        _SHARED_SKIPPED.append(item.nodeid)
        pytest.skip(reason)  # one place, one reason: `-ra` prints one line for them all


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _debug_caplog(item)
    reason = _shared_missing(item)
    if reason is not None:  # under CI (else skipped at setup): fail before the test's body
        _SHARED_FAILED.append(item.nodeid)
        pytest.fail(f"{reason}; required under CI", pytrace=False)


def _shared_missing(item: pytest.Item) -> str | None:
    if item.get_closest_marker("needs_shared") is None:
        return None
    return shared_data.missing_reason()


@pytest.fixture(scope="session")
def kafka_message_specs() -> Path:
    """The folder of Kafka's JSON message specs (tests/shared_data.py); a test taking it is
    marked `needs_shared`."""
    return shared_data.kafka_message_specs()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    module = sys.modules.get(_PIPELINE_MODULE)
    if module is not None and module.REUSE_CHECKS.compared:
        from zkbroker.broker.protocol.api_keys import ApiKey

        compared = module.REUSE_CHECKS.compared
        by_api = ", ".join(f"{ApiKey(key).name} {n}" for key, n in sorted(compared.items()))
        terminalreporter.write_line(
            f"reused answers compared with fresh ones: {sum(compared.values())} ({by_api}), "
            f"{len(module.REUSE_CHECKS.mismatches)} differed"
        )
    reason = shared_data.missing_reason()
    if _SHARED_SKIPPED and reason is not None:
        terminalreporter.write_line(
            f"{len(_SHARED_SKIPPED)} tests skipped: {reason} (under CI they fail)",
            yellow=True,
        )
    if _SHARED_FAILED and reason is not None:
        terminalreporter.write_line(
            f"{len(_SHARED_FAILED)} tests failed: {reason}", red=True, bold=True
        )
