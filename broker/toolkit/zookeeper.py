"""Test support: one real ZooKeeper per test session, one fresh chroot per test.

Depends on nothing under ``tests/`` and defines no fixtures (``tests/conftest.py`` and
``zkbroker.broker.toolkit.pytest_plugin`` wrap these functions).
:func:`start_zookeeper_for_tests` uses ``$ZKBROKER_TEST_ZOOKEEPER`` ("external", never stopped),
else a ``zookeeper:3.8`` testcontainers container when Docker answers (dropped, with a warning,
when unreachable within ``CONTAINER_REACH_TIMEOUT``), else
:class:`zkbroker.broker.zookeeper.embedded.EmbeddedZooKeeper` ("local"). Tests are isolated by
:func:`fresh_chroot`, not by restarting ZooKeeper.

Not here: installing Java, ZooKeeper or Docker, pulling images, checking that an external
ZooKeeper is reachable, deleting chroots on throw-away servers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from zkbroker.broker.log import get_logger
from zkbroker.broker.zookeeper.embedded import EmbeddedZooKeeper
from zkbroker.broker.zookeeper.errors import ZooKeeperNotFoundError, ZooKeeperStartError
from zkbroker.broker.zookeeper.network import is_serving

__all__ = [
    "CHROOT_PREFIX",
    "TEST_ZOOKEEPER_ENV",
    "ZOOKEEPER_IMAGE",
    "EndpointKind",
    "ZooKeeperEndpoint",
    "docker_engine_available",
    "fresh_chroot",
    "remove_chroot",
    "start_zookeeper_for_tests",
]

log = get_logger(__name__)

TEST_ZOOKEEPER_ENV = "ZKBROKER_TEST_ZOOKEEPER"
ZOOKEEPER_IMAGE = "zookeeper:3.8"
CHROOT_PREFIX = "/zkbroker-test-"
CONTAINER_CLIENT_PORT = 2181
CONTAINER_READY_TIMEOUT = 60.0
# When no address of the container accepts even a TCP connection for this long, the container
# is given up at once (and the local ZooKeeper used) instead of after CONTAINER_READY_TIMEOUT.
CONTAINER_REACH_TIMEOUT = 8.0
CONTAINER_PROBE_TIMEOUT = 0.5
DOCKER_PING_TIMEOUT = 2.0
# docker-py's own default when neither DOCKER_HOST nor a context names a host.
_DEFAULT_DOCKER_SOCKET = Path("/var/run/docker.sock")

EndpointKind = Literal["container", "local", "external"]


def _nothing_to_stop() -> None:
    return None


@dataclass(frozen=True)
class ZooKeeperEndpoint:
    """Where the test ZooKeeper listens, what runs it, and how to stop it.

    ``stop`` is idempotent. The endpoint is also a context manager that calls it.
    """

    connect_string: str
    kind: EndpointKind
    stop: Callable[[], None] = field(default=_nothing_to_stop, repr=False, compare=False)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _once(action: Callable[[], None]) -> Callable[[], None]:
    # testcontainers' stop() fails on a second call; fixtures and context
    # managers may both end up stopping the same endpoint.
    done = False

    def run_once() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return run_once


# --------------------------------------------------------------------------
# Docker detection
# --------------------------------------------------------------------------


def docker_engine_available(timeout: float = DOCKER_PING_TIMEOUT) -> bool:
    """True only when a Docker engine answers a ping within ``timeout`` seconds.

    The host is resolved the way testcontainers resolves it (its properties
    file, ``DOCKER_HOST``, the current docker context). With no host named and
    no ``/var/run/docker.sock``, this returns False without any I/O: the
    ``docker`` CLI being installed says nothing about a daemon running.
    """
    try:
        # docker-py has no type hints and pyproject's mypy overrides do not list it.
        import docker  # type: ignore[import-untyped, unused-ignore]
        from testcontainers.core.docker_client import get_docker_host
    except ImportError:
        return False
    try:
        host = get_docker_host()
    except Exception:  # a broken ~/.docker/config.json must not break the test run
        host = None
    if host is None and not _DEFAULT_DOCKER_SOCKET.exists():
        return False
    if (
        host is not None
        and host.startswith("unix://")
        and not Path(host.removeprefix("unix://")).exists()
    ):
        return False
    environment = dict(os.environ)
    if host is not None:
        environment["DOCKER_HOST"] = host
    kwargs: dict[str, Any] = {"timeout": timeout, "environment": environment}
    if host is not None and host.startswith("ssh://"):
        # Like testcontainers: paramiko fails under pytest's captured stdin.
        kwargs["use_ssh_client"] = True
    try:
        client = docker.from_env(**kwargs)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


# --------------------------------------------------------------------------
# Starting a ZooKeeper for a test session
# --------------------------------------------------------------------------


def start_zookeeper_for_tests(*, env: Mapping[str, str] | None = None) -> ZooKeeperEndpoint:
    """Provide a running ZooKeeper for a test session (see the module docstring for the order).

    The caller must call ``stop()`` on the result (or use it as a context manager).

    Raises:
        ZooKeeperNotFoundError: no external ZooKeeper, no Docker, and no local
            Java/ZooKeeper; the message says how to fix each.
        ZooKeeperStartError: a local ZooKeeper was found but did not start.
    """
    env = os.environ if env is None else env
    external = env.get(TEST_ZOOKEEPER_ENV, "").strip()
    if external:
        log.info("zookeeper.test_backend", kind="external", connect_string=external)
        return ZooKeeperEndpoint(external, "external")

    container_error: BaseException | None = None
    if docker_engine_available():
        try:
            endpoint = _start_container()
        except Exception as exc:
            # An engine that answers may still be unable to pull (offline
            # laptop); a local ZooKeeper is as good for the tests.
            container_error = exc
            log.warning("zookeeper.test_container_failed", image=ZOOKEEPER_IMAGE, error=repr(exc))
        else:
            log.info(
                "zookeeper.test_backend", kind="container", connect_string=endpoint.connect_string
            )
            return endpoint
    else:
        log.info("zookeeper.test_docker_unavailable")

    endpoint = _start_local(container_error)
    log.info("zookeeper.test_backend", kind="local", connect_string=endpoint.connect_string)
    return endpoint


def _start_container() -> ZooKeeperEndpoint:
    from testcontainers.core.container import DockerContainer

    container = (
        DockerContainer(ZOOKEEPER_IMAGE)
        .with_exposed_ports(CONTAINER_CLIENT_PORT)
        # The image whitelists only `srvr`; readiness needs `ruok` too.
        .with_env("ZOO_4LW_COMMANDS_WHITELIST", "*")
        .with_env("ZOO_ADMINSERVER_ENABLED", "false")
        .with_env("ZOO_MAX_CLIENT_CNXNS", "0")
        .with_env("ZK_SERVER_HEAP", "256")
    )
    try:
        container.start()
    except Exception as exc:
        raise ZooKeeperStartError(_start_failure_hint(exc)) from exc
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(CONTAINER_CLIENT_PORT))
        candidates = [(host, port), *_other_addresses(container, port)]
        started = time.monotonic()
        while True:
            # Docker's port proxy accepts connections before ZooKeeper listens, so
            # "connectable" is not "ready"; is_serving asks ZooKeeper itself.
            for candidate in candidates:
                if is_serving(*candidate):
                    return ZooKeeperEndpoint(
                        "{}:{}".format(*candidate), "container", _once(container.stop)
                    )
            elapsed = time.monotonic() - started
            if elapsed > CONTAINER_READY_TIMEOUT or (
                elapsed > CONTAINER_REACH_TIMEOUT
                and not any(_connectable(*candidate) for candidate in candidates)
            ):
                raise ZooKeeperStartError(_not_ready_message(container, candidates, elapsed))
            time.sleep(0.1)
    except BaseException:
        container.stop()
        raise


def _other_addresses(container: Any, port: int) -> list[tuple[str, int]]:
    """Where else the container's client port may answer when the address testcontainers
    picked does not (its gateway IP inside a container whose bridge is not reachable)."""
    found: list[tuple[str, int]] = [("127.0.0.1", port)]
    with contextlib.suppress(Exception):
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        networks = wrapped.attrs["NetworkSettings"]["Networks"] or {}
        for network in networks.values():
            if network.get("IPAddress"):
                found.append((network["IPAddress"], CONTAINER_CLIENT_PORT))
    return found


def _connectable(host: str, port: int, timeout: float = CONTAINER_PROBE_TIMEOUT) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _start_failure_hint(exc: BaseException) -> str:
    from testcontainers.core.config import testcontainers_config

    text = f"the {ZOOKEEPER_IMAGE} container did not start: {exc!r}"
    if not testcontainers_config.ryuk_disabled and "ryuk" in text.lower():
        text += (
            "; on engines without testcontainers' Ryuk image set TESTCONTAINERS_RYUK_DISABLED=true"
        )
    return text


def _not_ready_message(container: Any, candidates: list[tuple[str, int]], elapsed: float) -> str:
    stdout, stderr = container.get_logs()
    tail = (stdout + stderr).decode("utf-8", errors="replace")[-4000:]
    tried = ", ".join(f"{host}:{port}" for host, port in candidates)
    if elapsed <= CONTAINER_READY_TIMEOUT:
        why = (
            f"none of {tried} accepted a connection within {CONTAINER_REACH_TIMEOUT:g} s: "
            "this process cannot reach the container the way testcontainers picked; set "
            "TESTCONTAINERS_CONNECTION_MODE (docker_host, gateway_ip or bridge_ip) to the one "
            f"that works here, or {TEST_ZOOKEEPER_ENV}=host:port"
        )
    else:
        why = f"no ZooKeeper answered ruok on {tried} within {CONTAINER_READY_TIMEOUT:g} s"
    return f"the {ZOOKEEPER_IMAGE} container is not usable: {why}; its log ends with:\n{tail}"


def _start_local(container_error: BaseException | None) -> ZooKeeperEndpoint:
    zookeeper = EmbeddedZooKeeper()
    try:
        zookeeper.start()
    except ZooKeeperNotFoundError as exc:
        # Replace rather than chain: one message listing every way out of a test session
        # (not the command line's `--zookeeper`) is what a failing first run needs.
        remedies = list(exc.remedies)
        if container_error is not None:
            remedies.append(
                f"fix the {ZOOKEEPER_IMAGE} container, which failed on the Docker engine "
                f"that answered: {container_error!r}"
            )
        elif importlib.util.find_spec("testcontainers") is None:
            remedies.append(
                "install zkbroker[docker] and run a Docker engine (ZooKeeper then runs in a "
                "container)"
            )
        else:
            remedies.append("run a Docker engine (ZooKeeper then runs in a container)")
        elsewhere = f"set {TEST_ZOOKEEPER_ENV}=host:port to use a ZooKeeper that runs already"
        raise ZooKeeperNotFoundError(exc.what, remedies, elsewhere=elsewhere) from None
    return ZooKeeperEndpoint(zookeeper.connect_string, "local", zookeeper.stop)


# --------------------------------------------------------------------------
# Chroots
# --------------------------------------------------------------------------


def fresh_chroot(connect_string: str) -> str:
    """Return ``connect_string`` with a new, unique chroot appended.

    The chroot znode is not created here: zkbroker's store creates a missing
    chroot, and tests using kazoo directly must ``ensure_path("/")`` first.
    An existing chroot in ``connect_string`` is kept as the parent.
    """
    return f"{connect_string.rstrip('/')}{CHROOT_PREFIX}{secrets.token_hex(8)}"


def remove_chroot(connect_string: str, timeout: float = 10.0) -> None:
    """Delete the chroot of ``connect_string`` and everything below it, if it exists.

    Meant for external ZooKeepers, which outlive the test run.
    """
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    hosts, slash, path = connect_string.partition("/")
    if not slash or not path.strip("/"):
        raise ValueError(f"{connect_string!r} has no chroot; refusing to delete everything")
    client = KazooClient(hosts=hosts, timeout=timeout)
    client.start(timeout=timeout)
    try:
        with contextlib.suppress(NoNodeError):
            client.delete("/" + path.strip("/"), recursive=True)
    finally:
        client.stop()
        client.close()
