"""ZooKeeper authentication of zkbroker's sessions (Kafka's ``zookeeper.set.acl`` and JAAS
client login; docs/kafka-behaviour.md §19): ``ZkAuth`` (digest ``addauth`` on every connection,
or a SASL DIGEST-MD5 login the server checks) and the start-up check that the session may write
the cluster's znodes. ZooKeeper's digest provider accepts any password (it only names the session
``digest:user:<hash>``), so a wrong password, or none for a secured cluster, is refused here with
``ZkAuthError`` instead of failing at the first write.

Deliberately not here: which ACLs a znode gets (``zkbroker.zk_layout.nodes.secure_paths``),
Kerberos (GSSAPI), changing the ACLs of existing znodes (Kafka's zookeeper-security-migration).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.security import ACL, Id

from zkbroker.zk_layout.errors import NoNodeError, ZkConnectionError, ZkOperationError
from zkbroker.zk_layout.nodes.secure_paths import OWNERSHIP_PROBE_PATH, digest_id, writable_by


class ZkAuthError(ZkConnectionError):
    """The session cannot act as zkbroker must: its credentials were refused, or it may not
    write the cluster's znodes (a wrong digest password, or none for a secured cluster)."""


@dataclass(frozen=True)
class ZkAuth:
    """Credentials of zkbroker's own ZooKeeper sessions, and Kafka's ``zookeeper.set.acl``
    (whether the znodes it creates get Kafka's secure ACLs). ``scheme`` ``digest``: an
    ``addauth digest`` on each connection (identity ``digest:user:<hash>``); ``sasl``: a SASL
    DIGEST-MD5 login the server checks (identity ``sasl:user``, Kafka's way, through JAAS)."""

    user: str
    password: str = field(repr=False)
    set_acl: bool = True
    scheme: str = "digest"

    def __post_init__(self) -> None:
        if not self.user or ":" in self.user:
            raise ValueError(
                f"a ZooKeeper digest user is a non-empty name without ':', got {self.user!r}"
            )
        if self.scheme not in ("digest", "sasl"):
            raise ValueError(f"ZooKeeper authentication is digest or sasl, got {self.scheme!r}")

    @classmethod
    def parse(cls, text: str, *, set_acl: bool = True, scheme: str = "digest") -> ZkAuth:
        """``user:password`` (the password may hold ':')."""
        user, sep, password = text.partition(":")
        if not sep:
            raise ValueError("ZooKeeper digest credentials are user:password")
        return cls(user, password, set_acl, scheme)

    @property
    def kazoo_options(self) -> dict[str, Any]:
        """KazooClient keyword arguments: ``auth_data`` (sent as ``addauth`` on every
        connection) or ``sasl_options`` (pure-sasl's DIGEST-MD5)."""
        if self.scheme == "sasl":
            return {
                "sasl_options": {
                    "mechanism": "DIGEST-MD5",
                    "username": self.user,
                    "password": self.password,
                }
            }
        return {"auth_data": [("digest", f"{self.user}:{self.password}")]}

    @property
    def identity(self) -> Id:
        """The identity ZooKeeper gives the session (what ``auth`` ACLs name)."""
        if self.scheme == "sasl":
            return Id("sasl", self.user)
        return digest_id(self.user, self.password)


async def check_may_write(
    get_acls: Callable[[str], Awaitable[tuple[list[ACL], Any]]],
    auth: ZkAuth | None,
    hosts: str,
) -> None:
    """Refuse a session that could not write the cluster's znodes: ZooKeeper's digest
    provider takes any password, so a wrong one only shows as NoAuth on the first write.
    ``get_acls(path)`` reads a znode's ACLs on the session being checked."""
    try:
        acls, _stat = await get_acls(OWNERSHIP_PROBE_PATH)
    except NoNodeError:
        return  # a new cluster: this session creates (and owns) it
    except ZkConnectionError:
        raise
    except ZkOperationError as e:  # NoAuth: not even readable by this session
        raise ZkAuthError(
            f"ZooKeeper at {hosts!r}: zkbroker's session may not read the ACL of "
            f"{OWNERSHIP_PROBE_PATH} ({e}); give the credentials the cluster was created "
            "with (--zookeeper-digest USER:PASSWORD)",
            op="connect",
            path=OWNERSHIP_PROBE_PATH,
        ) from e
    identities = [auth.identity] if auth else []
    if writable_by(acls, identities):
        return
    owners = ", ".join(f"{a.id.scheme}:{a.id.id}" for a in acls if a.perms & 4) or "nobody"
    who = f"{auth.scheme} user {auth.user!r}" if auth else "a session without credentials"
    raise ZkAuthError(
        f"ZooKeeper at {hosts!r}: {OWNERSHIP_PROBE_PATH} may be written only by {owners}, "
        f"and zkbroker authenticated as {who} cannot write it; give the credentials the "
        "cluster was created with (--zookeeper-digest USER:PASSWORD)",
        op="connect",
        path=OWNERSHIP_PROBE_PATH,
    )
