"""Talking to the embedded server over TCP without a ZooKeeper client: a free port for it, and
the four-letter words (`ruok`, `srvr`, `conf`) that tell whether it serves and which data
directory it serves.

Not here: the client protocol (kazoo, `zkbroker.zk_layout.store`), which words the server allows
(`zkbroker.broker.zookeeper.config_files`, docs/kafka-behaviour.md §19).
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from zkbroker.broker.zookeeper.config_files import LOOPBACK
from zkbroker.broker.zookeeper.errors import ZooKeeperError

_handed_out_ports: set[int] = set()
_ports_lock = threading.Lock()


def pick_free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port on ``host`` that is free now and not handed out before by this process.

    The port is free only at the time of the call; `EmbeddedZooKeeper`
    retries with another one if ZooKeeper then fails to bind it.
    """
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        # The kernel may offer the same port twice in a row; two instances
        # started back to back must not both get it.
        with _ports_lock:
            if port not in _handed_out_ports:
                _handed_out_ports.add(port)
                return port
    raise ZooKeeperError(f"could not find a free TCP port on {host}")


def send_four_letter_word(host: str, port: int, command: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter-word command and return the whole answer.

    Raises:
        OSError: the server could not be reached or did not answer in time.
    """
    if len(command) != 4:
        raise ValueError(f"four-letter words have four letters, not {command!r}")
    chunks: list[bytes] = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(command.encode("ascii"))
        # ZooKeeper answers and closes the connection; EOF ends the answer.
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def is_serving(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when the ZooKeeper at host:port answers ``ruok`` and serves requests.

    ``ruok`` alone is not enough: ZooKeeper answers ``imok`` as soon as its
    port is open, while ``srvr`` still says "not currently serving requests"
    until the database is loaded.
    """
    try:
        if send_four_letter_word(host, port, "ruok", timeout) != "imok":
            return False
        return "Mode: " in send_four_letter_word(host, port, "srvr", timeout)
    except OSError:
        return False


def serves_data_dir(host: str, port: int, data_dir: Path) -> bool:
    """True when the server at host:port serves and its data directory is `data_dir`.

    `conf` answers only once the server is serving, and its dataDir line proves the answer
    comes from *our* JVM, not from another ZooKeeper that grabbed the same port between
    pick_free_port() and our bind.
    """
    try:
        answer = send_four_letter_word(host, port, "conf", timeout=1.0)
    except OSError:
        return False
    for line in answer.splitlines():
        if line.startswith("dataDir="):
            served = Path(line.removeprefix("dataDir="))
            return data_dir in (served, served.parent)
    return False
