"""`ZkBrokerContainer`: zkbroker's image as a testcontainers module, used like `KafkaContainer`.

    with ZkBrokerContainer(brokers=3, kafka_version="3.9") as kafka:
        kafka.get_bootstrap_server()        # "127.0.0.1:PORT,127.0.0.1:PORT+1,..."

It starts the image (`zkbroker:latest` by default: `docker build -t zkbroker .`) with the
brokers' port numbers chosen free on this machine, so the address a broker advertises is the
one a client dials, with published ports (the default) or with `host_network=True` (engines
without a usable bridge; the listeners then bind 127.0.0.1 only). It is ready when a broker
answers a Metadata request listing every broker (and, with SCRAM users, when a SCRAM login
succeeds on every broker), not when a log line appears. `security=Security(...)` (the same
class as `Cluster(security=...)`) secures the host's listener with SASL users and TLS;
`fault(...)` and `zkbroker_command(...)` run the `zkbroker` CLI inside the container.

It does not build or pull the image itself (docker-py pulls a missing image on start), and it
does not support engines on another machine with `host_network=True`.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from testcontainers.core.container import DockerContainer

from zkbroker.broker.security.cluster_security import PreparedSecurity, Security

__all__ = ["DEFAULT_IMAGE", "IMAGE_ENV", "ZkBrokerContainer", "ZkBrokerContainerError"]

#: The image started when none is given; `$ZKBROKER_IMAGE` overrides it.
DEFAULT_IMAGE = "zkbroker:latest"
IMAGE_ENV = "ZKBROKER_IMAGE"
#: The image's listener for other containers (ZKBROKER_INTERNAL_PORT), with published ports.
INTERNAL_PORT = 29092
READY_TIMEOUT_S = 60.0
_LOG_TAIL_CHARS = 4000
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----\n?", re.DOTALL)


class ZkBrokerContainerError(RuntimeError):
    """The container did not start or did not become ready; the message quotes its logs."""


def free_port_block(count: int, host: str = "127.0.0.1", attempts: int = 50) -> int:
    """The first of `count` consecutive ports free on `host` (each broker listens on PORT + i)."""
    for _ in range(attempts):
        with socket.socket() as probe:
            probe.bind((host, 0))
            first = int(probe.getsockname()[1])
        if first + count > 65535:
            continue
        held: list[socket.socket] = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind((host, port))
            return first
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise ZkBrokerContainerError(f"no {count} consecutive free ports on {host}")


def _inline_pem(configs: Mapping[str, str]) -> dict[str, str]:
    """The TLS file configs of `Security.prepare` as PEM text, so no file enters the container."""
    out = dict(configs)
    keystore = out.pop("ssl.keystore.location", None)
    if keystore is not None:
        with open(keystore, encoding="ascii") as f:
            blocks = [m.group(0) for m in _PEM_BLOCK.finditer(f.read())]
        out["ssl.keystore.key"] = "".join(b for b in blocks if "PRIVATE KEY" in b.split("\n")[0])
        out["ssl.keystore.certificate.chain"] = "".join(
            b for b in blocks if "CERTIFICATE" in b.split("\n")[0]
        )
    truststore = out.pop("ssl.truststore.location", None)
    if truststore is not None:
        with open(truststore, encoding="ascii") as f:
            out["ssl.truststore.certificates"] = f.read()
    return out


class ZkBrokerContainer(DockerContainer):
    """A zkbroker cluster (ZooKeeper inside) in one container; see the module docstring.

    Args:
        image: the zkbroker image (default `$ZKBROKER_IMAGE` or `zkbroker:latest`).
        brokers: number of brokers (ids 0..brokers-1).
        kafka_version: the release to emulate (`zkbroker run --kafka-version`).
        host_network: run with `--network host` instead of publishing ports.
        security: SASL users and TLS on the host's listener (`zkbroker.Security`); SCRAM users
            are written to the container's ZooKeeper before the container counts as ready.
        extra_args: more `zkbroker run` arguments (`--num-partitions`, `--broker-config`, ...).
        ready_timeout: seconds to wait for readiness before failing with the logs' tail.
        kwargs: passed to testcontainers' `DockerContainer` (and docker-py's `create`).
    """

    def __init__(
        self,
        image: str | None = None,
        *,
        brokers: int = 3,
        kafka_version: str = "3.9",
        host_network: bool = False,
        security: Security | None = None,
        extra_args: Sequence[str] = (),
        ready_timeout: float = READY_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        if brokers < 1:
            raise ValueError("brokers must be at least 1")
        super().__init__(image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE, **kwargs)
        self.brokers = brokers
        self.kafka_version = kafka_version
        self.host_network = host_network
        self.security_spec = security
        self.security: PreparedSecurity | None = None
        self.extra_args = tuple(extra_args)
        self.ready_timeout = ready_timeout
        self.port = 0
        self.internal_port = INTERNAL_PORT
        self._host = "127.0.0.1"

    # ---- what a test reads -------------------------------------------------------------------

    def get_bootstrap_server(self) -> str:
        """The brokers' addresses on the host's listener, `host:port,...` (as KafkaContainer)."""
        return ",".join(f"{self._host}:{self.port + i}" for i in range(self.brokers))

    def get_internal_bootstrap_server(self) -> str:
        """The brokers' addresses for other containers (the INTERNAL, PLAINTEXT listener)."""
        host = self._host if self.host_network else self._internal_host()
        return ",".join(f"{host}:{self.internal_port + i}" for i in range(self.brokers))

    def client_config(self, kind: str = "kafka-python", user: str | None = None) -> dict[str, Any]:
        """Client settings for `kind` ("kafka-python", "aiokafka", "confluent"), bootstrap
        servers included; the security settings too when the container has `security`."""
        if kind == "confluent":
            conf: dict[str, Any] = {"bootstrap.servers": self.get_bootstrap_server()}
        else:
            conf = {"bootstrap_servers": self.get_bootstrap_server()}
        if self.security is not None:
            conf.update(self.security.client_config(kind, user))
        return conf

    # ---- the CLI inside the container --------------------------------------------------------

    def zkbroker_command(self, *args: str) -> str:
        """Run `zkbroker ARGS --zookeeper <the container's ZooKeeper>` in the container (through
        `docker exec`, as the image's `zkbroker-zk`) and return its output; fails loudly."""
        code, output = self.exec(["zkbroker-zk", *args])
        text = output.decode("utf-8", errors="replace") if output else ""
        if code != 0:
            raise ZkBrokerContainerError(f"zkbroker {' '.join(args)} exited {code}: {text}")
        return text

    def fault(self, *args: str) -> str:
        """`zkbroker fault ARGS` in the container, e.g. `fault("push", "Produce",
        "NOT_LEADER_OR_FOLLOWER", "--count", "2")`, `fault("list")`, `fault("clear")`."""
        return self.zkbroker_command("fault", *args)

    def add_scram_user(self, name: str, password: str, mechanisms: Iterable[str] = ()) -> None:
        """`zkbroker user add` in the container (both SCRAM mechanisms by default)."""
        args = ["user", "add", name, "--password", password, "--kafka-version", self.kafka_version]
        for mechanism in mechanisms:
            args += ["--mechanism", mechanism]
        self.zkbroker_command(*args)

    # ---- start and stop ----------------------------------------------------------------------

    def start(self) -> ZkBrokerContainer:
        self._configure_cluster()
        try:
            super().start()
        except Exception as exc:
            self._cleanup_security()
            raise self._start_error(exc) from exc
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        try:
            super().stop(force=force, delete_volume=delete_volume)
        finally:
            self._cleanup_security()

    def _cleanup_security(self) -> None:
        if self.security is not None:
            self.security.cleanup()

    def _configure_cluster(self) -> None:
        self.port = free_port_block(self.brokers)
        args = list(self.extra_args)
        env = {
            "ZKBROKER_BROKERS": str(self.brokers),
            "ZKBROKER_KAFKA_VERSION": self.kafka_version,
            "ZKBROKER_PORT": str(self.port),
            "ZKBROKER_ADVERTISED_HOST": self._host,
        }
        if self.host_network:
            self.internal_port = free_port_block(self.brokers)
            env |= {
                "ZKBROKER_LISTEN_HOST": "127.0.0.1",
                "ZKBROKER_INTERNAL_HOST": "127.0.0.1",
            }
            self.with_kwargs(network_mode="host")
        else:
            # A name other containers can dial on the INTERNAL listener (not published: they
            # reach the container's ports on their network directly).
            env["ZKBROKER_INTERNAL_HOST"] = self._internal_host()
            for i in range(self.brokers):
                # docker-py's (host ip, port) binding: published on loopback only. Set on
                # `ports` itself: testcontainers' with_bind_ports (4.15) takes a bare port
                # number, which docker-py publishes on every interface.
                self.ports[f"{self.port + i}/tcp"] = cast(Any, (self._host, self.port + i))
        env["ZKBROKER_INTERNAL_PORT"] = str(self.internal_port)
        if self.security_spec is not None:
            self.security = self.security_spec.prepare()
            env["ZKBROKER_EXTERNAL_PROTOCOL"] = self.security_spec.protocol
            own_prefix = f"listener.name.{self.security.listener_name.lower()}."
            for key, value in _inline_pem(self.security.broker_configs).items():
                if key.startswith(own_prefix):
                    key = "listener.name.external." + key.removeprefix(own_prefix)
                args += ["--broker-config", f"{key}={value}"]
        for key, value in env.items():
            self.with_env(key, value)
        if args:
            self.with_command(args)

    def _internal_host(self) -> str:
        if self._name:
            return str(self._name)
        if not hasattr(self, "_alias"):
            self._alias = f"zkbroker-{secrets.token_hex(4)}"
            self.with_kwargs(hostname=self._alias)
            network = getattr(self, "_network", None)  # testcontainers' Network, when given
            if network is not None:
                # A network alias: how other containers on the network resolve it.
                self.with_network_aliases(*(self._network_aliases or []), self._alias)
        return self._alias

    def _start_error(self, exc: Exception) -> ZkBrokerContainerError:
        from testcontainers.core.config import testcontainers_config

        text = repr(exc)
        if not testcontainers_config.ryuk_disabled and (
            "ryuk" in text.lower() or testcontainers_config.ryuk_image in text
        ):
            return ZkBrokerContainerError(
                f"testcontainers' Ryuk container ({testcontainers_config.ryuk_image}) did not "
                f"start: {text}; on engines without that image set "
                "TESTCONTAINERS_RYUK_DISABLED=true (containers are then removed by stop() only)"
            )
        return ZkBrokerContainerError(f"the {self.image} container did not start: {text}")

    # ---- readiness ---------------------------------------------------------------------------

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        last = "no answer yet"
        while True:
            status = self._status()
            if status in ("exited", "dead"):
                raise self._not_ready(f"the container {status}")
            try:
                brokers = self._metadata_brokers()
            except Exception as exc:  # refused, reset, not yet registered: try again
                last = repr(exc)
            else:
                if brokers >= self.brokers:
                    break
                last = f"Metadata lists {brokers} of {self.brokers} brokers"
            if time.monotonic() > deadline:
                raise self._not_ready(f"no Metadata answer listing every broker ({last})")
            time.sleep(0.1)
        if self.security is not None and self.security_spec is not None:
            spec = self.security_spec
            if spec.scram_mechanisms:
                for user, password in spec.users.items():
                    self.add_scram_user(user, password, spec.scram_mechanisms)
            if spec.scram_mechanisms and spec.users:
                self._wait_scram_logins(deadline)

    def _status(self) -> str:
        with contextlib.suppress(Exception):
            container = self.get_wrapped_container()
            container.reload()
            return str(container.status)
        return "unknown"

    def _metadata_brokers(self) -> int:
        from zkbroker.broker.protocol.messages.metadata import MetadataRequest
        from zkbroker.broker.toolkit.wire import WireClient

        # The INTERNAL listener is PLAINTEXT whatever `security` says; with published ports it
        # is not reachable from the host, so the host's listener is asked (PLAINTEXT only).
        if self.host_network:
            address = (self._host, self.internal_port)
        elif self.security_spec is None:
            address = (self._host, self.port)
        else:
            return self.brokers if self._api_versions_answered() else 0
        with WireClient(*address, client_id="zkbroker-container") as client:
            client.sock.settimeout(2.0)
            answer = client.request(1, MetadataRequest(topics=[]))
        return len(answer.brokers)

    def _api_versions_answered(self) -> bool:
        from zkbroker.broker.protocol.messages.api_versions import ApiVersionsRequest

        for i in range(self.brokers):
            with self._secured_client(self.port + i) as client:
                if client.request(0, ApiVersionsRequest()).error_code != 0:
                    return False
        return True

    @contextlib.contextmanager
    def _secured_client(self, port: int) -> Any:
        from zkbroker.broker.toolkit.wire import WireClient

        with WireClient(self._host, port, client_id="zkbroker-container") as client:
            client.sock.settimeout(2.0)
            if self.security is not None and self.security.security.tls:
                context = self.security.ssl_context()
                client.sock = context.wrap_socket(client.sock, server_hostname=self._host)
            yield client

    def _wait_scram_logins(self, deadline: float) -> None:
        """SCRAM users reach the brokers through ZooKeeper notifications: wait until each
        broker accepts the first user's login with each SCRAM mechanism."""
        assert self.security_spec is not None
        user, password = next(iter(self.security_spec.users.items()))
        for i in range(self.brokers):
            for mechanism in self.security_spec.scram_mechanisms:
                while True:
                    try:
                        if self._scram_login(self.port + i, user, password, mechanism):
                            break
                        last = "authentication failed"
                    except Exception as exc:
                        last = repr(exc)
                    if time.monotonic() > deadline:
                        raise self._not_ready(
                            f"broker {i} refuses {mechanism} for {user!r} ({last})"
                        )
                    time.sleep(0.1)

    def _scram_login(self, port: int, user: str, password: str, mechanism: str) -> bool:
        from scramp import ScramClient

        from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
        from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest

        with self._secured_client(port) as client:
            if client.request(1, SaslHandshakeRequest(mechanism=mechanism)).error_code != 0:
                return False
            scram = ScramClient([mechanism], user, password)
            client_first = scram.get_client_first().encode()
            first = client.request(1, SaslAuthenticateRequest(auth_bytes=client_first))
            if first.error_code != 0:
                return False
            scram.set_server_first(first.auth_bytes.decode())
            client_final = scram.get_client_final().encode()
            final = client.request(1, SaslAuthenticateRequest(auth_bytes=client_final))
            return bool(final.error_code == 0)

    def _not_ready(self, why: str) -> ZkBrokerContainerError:
        tail = ""
        with contextlib.suppress(Exception):
            stdout, stderr = self.get_logs()
            tail = (stdout + stderr).decode("utf-8", errors="replace")[-_LOG_TAIL_CHARS:]
        return ZkBrokerContainerError(
            f"{self.image} ({self.brokers} brokers, Kafka {self.kafka_version}) was not ready "
            f"within {self.ready_timeout:g} s: {why}; its log ends with:\n{tail}"
        )
