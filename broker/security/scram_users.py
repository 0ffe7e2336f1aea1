"""Writing SCRAM credentials to ZooKeeper as `kafka-configs --zookeeper --alter --add-config
'SCRAM-SHA-256=[iterations=4096,password=...]' --entity-type users --entity-name alice` did:
the user's `/config/users/<sanitized user>` keeps its other keys (quotas) and gets each
mechanism's credential in Kafka's text form, written with its `/config/changes` notification
in one transaction (`zkbroker.zk_layout.store.admin_zk.change_entity_config`), so running brokers
pick it up at once and brokers started later load it.

Deliberately not here: the AlterUserScramCredentials API
(`zkbroker.handlers.alter_user_scram_credentials`, which receives salted passwords rather than
passwords) and deleting users.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from zkbroker.broker.security.scram import MECHANISM_TYPES, credential_from_password
from zkbroker.zk_layout import (
    ConfigChangesNode,
    ConfigEntityNode,
    ConfigEntityTypeNode,
    ConfigType,
    sanitize,
)
from zkbroker.zk_layout.store.admin_zk import change_entity_config
from zkbroker.zk_layout.store.client import ZkClient


async def add_scram_user(
    store: ZkClient,
    user: str,
    passwords: Mapping[str, str],
    release: tuple[int, ...],
    iterations: int = 4096,
) -> None:
    """Set `user`'s credential for each mechanism -> password of `passwords`."""
    if not user:
        raise ValueError("Username must not be empty")
    for mechanism in passwords:
        if mechanism not in MECHANISM_TYPES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
    sanitized = sanitize(user)
    # Before any broker ran, /config/users may not exist (kafka-configs creates it too).
    await store.ensure_path(ConfigEntityTypeNode.path(ConfigType.USERS))
    await store.ensure_path(ConfigChangesNode.path())
    got = await store.get(ConfigEntityNode.path(ConfigType.USERS, sanitized))
    props = ConfigEntityNode.decode(got[0] or b"") if got is not None else {}
    for mechanism, password in passwords.items():
        # PBKDF2 with thousands of iterations: off the event loop, which serves clients.
        credential = await asyncio.to_thread(
            credential_from_password, mechanism, password, iterations
        )
        props[mechanism] = credential.to_text()
    await change_entity_config(store, ConfigType.USERS, sanitized, props, release)
