"""A real MIT Kerberos KDC for the GSSAPI tests: Debian's `krb5-kdc` and `krb5-admin-server`
(`kdb5_util`, `krb5kdc`, `kadmin.local`), its database, configuration and keytabs in a temporary
directory, listening on 127.0.0.1 only, on a free port.

Nothing global is touched: the KDC tools read `KRB5_KDC_PROFILE` and `KRB5_CONFIG` pointing at
the temporary files, and `environment()` gives the same variables (plus a credential cache and a
replay-cache directory of its own) for the test process, whose clients and in-process brokers
then use this realm. `stop()` ends the KDC (by its own pid) and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REALM = "ZKBROKER.TEST"
MASTER_PASSWORD = "zkbroker-kdc-master"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
_SBIN = ("/usr/sbin", "/usr/bin", "/sbin")


def tool(name: str) -> str | None:
    """The path of a Kerberos tool (the KDC's live in /usr/sbin, often not on PATH)."""
    found = shutil.which(name)
    if found is not None:
        return found
    for directory in _SBIN:
        path = Path(directory) / name
        if path.exists():
            return str(path)
    return None


def missing_tools() -> list[str]:
    return [name for name in TOOLS if tool(name) is None]


def _free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (the KDC listens on both)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
            tcp.bind(("127.0.0.1", 0))
            port = int(tcp.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                try:
                    udp.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port for the KDC")


@dataclass
class Kdc:
    directory: Path
    port: int
    realm: str = REALM
    process: subprocess.Popen[bytes] | None = None
    keytabs: dict[str, Path] = field(default_factory=dict)

    @property
    def krb5_conf(self) -> Path:
        return self.directory / "krb5.conf"

    @property
    def kdc_conf(self) -> Path:
        return self.directory / "kdc.conf"

    def environment(self) -> dict[str, str]:
        """What a process of this realm needs: its krb5.conf and KDC profile, a credential
        cache and replay caches inside the temporary directory."""
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.kdc_conf),
            "KRB5CCNAME": f"FILE:{self.directory / 'ccache-default'}",
            "KRB5RCACHEDIR": str(self.directory / "rcache"),
        }

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.environment()}
        return subprocess.run(
            list(args), env=env, check=check, capture_output=True, text=True, timeout=60
        )

    def kadmin(self, query: str) -> str:
        path = tool("kadmin.local")
        assert path is not None
        done = self._run(path, "-r", self.realm, "-q", query)
        if "error" in done.stderr.lower() or "error" in done.stdout.lower():
            raise RuntimeError(f"kadmin.local -q {query!r}: {done.stdout} {done.stderr}")
        return done.stdout

    def add_principal(self, name: str, keytab: Path | None = None) -> Path:
        """A principal with a random key, exported to `keytab` (default: a keytab of its own
        in the directory); returns the keytab."""
        self.kadmin(f"addprinc -randkey {name}")
        if keytab is None:
            keytab = self.directory / (name.replace("/", "_").replace("@", "_") + ".keytab")
        self.kadmin(f"ktadd -k {keytab} {name}")
        self.keytabs[name] = keytab
        return keytab

    def kinit(self, name: str) -> str:
        """A fresh credential cache holding `name`'s ticket (from its keytab); its KRB5CCNAME."""
        path = tool("kinit")
        assert path is not None
        cache = self.directory / ("ccache-" + name.replace("/", "_").replace("@", "_"))
        done = self._run(
            path, "-c", f"FILE:{cache}", "-k", "-t", str(self.keytabs[name]), name, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"kinit {name}: {done.stderr}")
        return f"FILE:{cache}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _write_configs(kdc: Kdc) -> None:
    d = kdc.directory
    (d / "rcache").mkdir()
    (d / "kadm5.acl").write_text(f"*/admin@{kdc.realm} *\n")
    kdc.kdc_conf.write_text(
        f"""[kdcdefaults]
    kdc_listen = 127.0.0.1:{kdc.port}
    kdc_tcp_listen = 127.0.0.1:{kdc.port}

[realms]
    {kdc.realm} = {{
        database_name = {d}/principal
        key_stash_file = {d}/stash
        acl_file = {d}/kadm5.acl
        admin_keytab = FILE:{d}/kadm5.keytab
        kdc_listen = 127.0.0.1:{kdc.port}
        kdc_tcp_listen = 127.0.0.1:{kdc.port}
        max_life = 1h
        max_renewable_life = 0
        supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
    }}

[logging]
    kdc = FILE:{d}/kdc.log
    admin_server = FILE:{d}/kadmin.log
    default = FILE:{d}/krb5lib.log
"""
    )
    # Host names are taken as given (no DNS, no reverse lookup), so a client asking for
    # kafka@127.0.0.1 gets a ticket for kafka/127.0.0.1, the broker's keytab principal.
    kdc.krb5_conf.write_text(
        f"""[libdefaults]
    default_realm = {kdc.realm}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    dns_canonicalize_hostname = false
    rdns = false
    ignore_acceptor_hostname = false
    forwardable = false
    udp_preference_limit = 1

[realms]
    {kdc.realm} = {{
        kdc = 127.0.0.1:{kdc.port}
    }}

[domain_realm]
    127.0.0.1 = {kdc.realm}
    localhost = {kdc.realm}
"""
    )


def start_kdc(realm: str = REALM) -> Kdc:
    """A KDC serving `realm` on 127.0.0.1, its database freshly created; RuntimeError (with
    its log) when it does not come up."""
    directory = Path(tempfile.mkdtemp(prefix="zkbroker-kdc-"))
    kdc = Kdc(directory, _free_port(), realm)
    try:
        _write_configs(kdc)
        kdb5_util = tool("kdb5_util")
        krb5kdc = tool("krb5kdc")
        assert kdb5_util is not None and krb5kdc is not None
        kdc._run(
            kdb5_util, "create", "-s", "-r", realm, "-P", MASTER_PASSWORD,
            "-d", str(directory / "principal"),
        )  # fmt: skip
        env = {**os.environ, **kdc.environment()}
        kdc.process = subprocess.Popen(
            [krb5kdc, "-n", "-r", realm, "-P", str(directory / "krb5kdc.pid")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if kdc.process.poll() is not None:
                raise RuntimeError("krb5kdc exited")
            try:
                with socket.create_connection(("127.0.0.1", kdc.port), timeout=1):
                    return kdc
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("krb5kdc did not listen within 20 s")
    except Exception as e:
        log = directory / "kdc.log"
        text = log.read_text() if log.exists() else ""
        kdc.stop()
        raise RuntimeError(f"KDC did not start: {e}\n{text}") from e
