"""Hosts a test builds for itself: network namespaces on one private switch, each with its own
address, a ZooKeeper ensemble across them, and programs started inside them.

The switch is a bridge inside a namespace of its own, so nothing the hosts do touches the
machine's own namespace: no address, no route, no bridge outside what the test made. Every
namespace and process is removed on `close()`, also after a failure. Needs root and iproute2
(`ip netns`). `Hosts.cut_off` pulls a host's cable at the switch (its port down: every packet to
or from it is dropped, silently for its peers) and `Hosts.heal` plugs it back; `tc netem` is
not used, as kernels built without sch_netem (CONFIG_NET_SCH_NETEM) are common in containers.

Not here: what the programs are (the tests start `zkbroker run` and clients in them).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from zkbroker.broker.zookeeper.config_files import render_log4j_properties, render_logback_xml
from zkbroker.broker.zookeeper.discovery import find_java, find_zookeeper_classpath
from zkbroker.broker.zookeeper.jvm_launch import build_java_command

PREFIX = "zkbt"
ZK_CLIENT_PORT = 2181


def available() -> str | None:
    """Why hosts cannot be built here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _remove_leftovers() -> None:
    """Namespaces an earlier test process made and could not remove (it was killed): those
    whose maker is gone. Only this module's names are looked at."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    for line in listed.stdout.splitlines():
        name = line.split(" ", 1)[0]
        pid = name.removeprefix(PREFIX).split("-", 1)[0]
        if name.startswith(PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


@dataclass
class Host:
    name: str
    address: str
    #: Its port on the switch (the veth peer of its eth0, inside the switch's namespace).
    port: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, argv: list[str], log: Path, **kw: object) -> subprocess.Popen[bytes]:
        """Start `argv` inside this host, its output in `log`, in a process group of its own."""
        out = log.open("ab")
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.name, *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **kw,  # type: ignore[arg-type]
        )
        out.close()
        self.processes.append(process)
        return process

    def run(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run `argv` inside this host to its end."""
        return subprocess.run(
            ["ip", "netns", "exec", self.name, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL to the process's group: a crash, nothing of a clean stop runs."""
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)

    def stop_all(self) -> None:
        _stop(self.processes)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to every process's group, then SIGKILL to those still there after 20 s."""
    for process in processes:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


class Hosts:
    """`count` hosts on 10.231.<net>.0/24, host i at .(i + 1); names carry the maker's pid."""

    def __init__(self, count: int, net: int = 7) -> None:
        _remove_leftovers()
        self.tag = f"{PREFIX}{os.getpid()}"
        self.switch = f"{self.tag}-sw"
        self.hosts = [
            Host(f"{self.tag}-h{i}", f"10.231.{net}.{i + 1}", f"p{i}") for i in range(count)
        ]
        self._made: list[str] = []
        # The ZooKeeper servers, stopped after the programs that use them (a broker stopping
        # while its ZooKeeper is gone waits for it).
        self._servers: list[subprocess.Popen[bytes]] = []
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        self._add_namespace(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")
        for host in self.hosts:
            self._add_namespace(host.name)
            _ip(
                *("link", "add", "eth0", "netns", host.name, "type", "veth"),
                *("peer", "name", host.port, "netns", self.switch),
            )
            _ip("-n", self.switch, "link", "set", host.port, "master", "br0", "up")
            _ip("-n", host.name, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.name, "link", "set", "eth0", "up")

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def cut_off(self, host: Host) -> None:
        """Pull `host`'s cable: its switch port goes down, so nothing reaches it or leaves it
        (a network partition; its own loopback still works). Its peers see no reset and no
        error, only silence, until their timeouts."""
        _ip("-n", self.switch, "link", "set", host.port, "down")

    def heal(self, host: Host) -> None:
        """Plug `host` back in (the bridge forwards at once: no spanning tree)."""
        _ip("-n", self.switch, "link", "set", host.port, "up")

    def close(self) -> None:
        everything = [p for host in self.hosts for p in host.processes]
        _stop([p for p in everything if p not in self._servers])
        _stop(self._servers)
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        self._made.clear()

    def zookeeper_ensemble(self, work: Path, servers: int | None = None) -> str:
        """One ZooKeeper server on each of the first `servers` hosts (all by default), as one
        ensemble (Debian's jar); its connect string."""
        java, classpath = find_java(), find_zookeeper_classpath()
        on = self.hosts[: len(self.hosts) if servers is None else servers]
        lines = [f"server.{i + 1}={h.address}:2888:3888" for i, h in enumerate(on)]
        for i, host in enumerate(on):
            home = work / f"zk{i + 1}"
            (home / "data").mkdir(parents=True)
            (home / "data" / "myid").write_text(f"{i + 1}\n")
            config = home / "zoo.cfg"
            config.write_text(
                "\n".join(
                    [
                        "tickTime=500",
                        "initLimit=20",
                        "syncLimit=10",
                        f"dataDir={home / 'data'}",
                        f"clientPort={ZK_CLIENT_PORT}",
                        f"clientPortAddress={host.address}",
                        "admin.enableServer=false",
                        "4lw.commands.whitelist=ruok,srvr",
                        "forceSync=no",
                        *lines,
                    ]
                )
                + "\n"
            )
            log4j, logback = home / "log4j.properties", home / "logback.xml"
            log4j.write_text(render_log4j_properties(home / "zookeeper.log"))
            logback.write_text(render_logback_xml(home / "zookeeper.log"))
            argv = build_java_command(
                java=java,
                classpath=classpath,
                config_file=config,
                log4j_config=log4j,
                logback_config=logback,
            )
            self._servers.append(host.start(argv, home / "zookeeper.out"))
        connect = ",".join(f"{h.address}:{ZK_CLIENT_PORT}" for h in on)
        self._wait_for_quorum(on, connect)
        return connect

    def _wait_for_quorum(self, on: list[Host], connect: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        first = on[0]
        while time.monotonic() < deadline:
            modes = [
                first.run([sys.executable, "-c", _SRVR, h.address, str(ZK_CLIENT_PORT)], timeout=10)
                for h in on
            ]
            if all("Mode: " in m.stdout for m in modes):
                return
            time.sleep(0.5)
        raise AssertionError(f"no ZooKeeper quorum on {connect} within {timeout} s")


# `srvr` asked from inside a host (the test's own namespace cannot reach the hosts).
_SRVR = """
import sys
from zkbroker.broker.zookeeper.network import send_four_letter_word
try:
    print(send_four_letter_word(sys.argv[1], int(sys.argv[2]), "srvr"))
except OSError:
    pass
"""
