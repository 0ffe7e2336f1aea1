"""Dynamic config nodes: ``/config``, ``/config/<type>``, ``/config/<type>/<name>`` (entity
config, ``<default>`` and ``/config/users/<u>/clients/<c>`` included), ``/config/changes`` and
its ``config_change_<10 digits>`` notifications.

Formats, lenient decoding and entity-name sanitizing follow docs/kafka-behaviour.md §1.8
(helpers such as ``ConfigEntityNode.user(...)`` apply the right naming rule). A notification
decodes to None when Kafka ignores it (neither a JSON object nor a string); a pre-v1 string
decodes with ``version == 0``, and ``ConfigChangeNotification.honoured_by(release)`` says
whether a release acts on it.

Not here: applying configs (``zkbroker.broker.image.config_watcher``), validating names and
values, the purge of old notifications, the 3.x quota-node cleanup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, SequenceMixin, ZNode, check_version
from zkbroker.zk_layout.release import Release, release_at_least
from zkbroker.zk_layout.sanitizer import sanitize


class ConfigType:
    """Entity types, i.e. the children of ``/config`` (Kafka's ``ConfigType``)."""

    TOPICS: Final = "topics"
    CLIENTS: Final = "clients"
    USERS: Final = "users"
    BROKERS: Final = "brokers"
    IPS: Final = "ips"
    ALL: Final = (TOPICS, CLIENTS, USERS, BROKERS, IPS)


DEFAULT_ENTITY: Final = "<default>"


class ConfigNode(EmptyNode, name="config"):
    """``/config``: parent of the entity types and of the change notifications."""


class ConfigEntityTypeNode(EmptyNode, parent=ConfigNode, name="{type}"):
    """``/config/<type>``: created empty at broker start for every type; ``path(entity_type)``."""


def _sanitized_or_default(name: str | None) -> str:
    return DEFAULT_ENTITY if name is None else sanitize(name)


class ConfigEntityNode(ZNode[dict[str, str]], parent=ConfigEntityTypeNode, name="{name}"):
    """``path(entity_type, entity_name)``: from a type and an already-sanitized name
    (``"alice/clients/app1"`` for the nested user+client entity)."""

    FORMAT_VERSIONS = (1,)

    # Helpers that apply Kafka's naming rules; None means the <default> entity.
    @classmethod
    def topic(cls, topic: str) -> str:
        return cls.path(ConfigType.TOPICS, topic)

    @classmethod
    def broker(cls, broker_id: int | None) -> str:
        return cls.path(ConfigType.BROKERS, DEFAULT_ENTITY if broker_id is None else str(broker_id))

    @classmethod
    def user(cls, user: str | None) -> str:
        return cls.path(ConfigType.USERS, _sanitized_or_default(user))

    @classmethod
    def client(cls, client_id: str | None) -> str:
        return cls.path(ConfigType.CLIENTS, _sanitized_or_default(client_id))

    @classmethod
    def user_client(cls, user: str | None, client_id: str | None) -> str:
        return cls.path(
            ConfigType.USERS,
            f"{_sanitized_or_default(user)}/clients/{_sanitized_or_default(client_id)}",
        )

    @classmethod
    def ip(cls, ip: str | None) -> str:
        return cls.path(ConfigType.IPS, DEFAULT_ENTITY if ip is None else ip)

    @staticmethod
    def entity_path(path: str) -> str:
        """``/config/users/alice/clients/app1`` -> ``users/alice/clients/app1`` (the form a v2
        change notification carries)."""
        root = f"{ConfigNode.path()}/"
        if not path.startswith(root):
            raise ValueError(f"{path!r} is not under {root}")
        return path[len(root) :]

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: Mapping[str, str], release: Release) -> bytes:
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"config entries must be str -> str, got {k!r}: {v!r}")
        return cj.dumps({"version": 1, "config": dict(value)})

    @classmethod
    def decode(cls, data: bytes) -> dict[str, str]:
        parsed = cj.try_parse(data)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("config"), dict):
            return {}
        return {
            k: cj.check_str(v, cls.PATTERN, f"value of config {k!r}")
            for k, v in parsed["config"].items()
        }


class ConfigChangesNode(EmptyNode, parent=ConfigNode, name="changes"):
    """``/config/changes``: every broker watches its children."""


@dataclass(frozen=True)
class ConfigChangeNotification:
    """Which entity changed. ``entity_name`` is the sanitized name below the type, which for the
    nested quota entity is ``"<user>/clients/<client>"``. ``version`` is the format version it was
    decoded from (0 = pre-v1), None for a value built in memory."""

    entity_type: str
    entity_name: str
    version: int | None = None

    @property
    def entity_path(self) -> str:
        return f"{self.entity_type}/{self.entity_name}"

    @classmethod
    def for_path(cls, entity_path: str) -> ConfigChangeNotification:
        """From ``"topics/foo"`` or ``ConfigEntityNode.entity_path(...)``."""
        entity_type, sep, name = entity_path.partition("/")
        if not sep or not name:
            raise ValueError(f"entity path {entity_path!r} is not <type>/<name>")
        return cls(entity_type, name)

    def honoured_by(self, release: Release) -> bool:
        """Would a broker of ``release`` act on this notification? (A value built in memory,
        ``version`` None, is taken to be in the format that release writes: yes.)"""
        if self.version is None:
            return True
        if self.version == 0:
            return not release_at_least(release, (0, 9))
        if self.version == 2:
            return release_at_least(release, (0, 10, 1))
        return release_at_least(release, (0, 9))


class ConfigChangeNotificationNode(
    SequenceMixin, ZNode[ConfigChangeNotification | None], parent=ConfigChangesNode
):
    """``/config/changes/config_change_<seq>``: ``path(sequence)``."""

    FORMAT_VERSIONS = (0, 1, 2)
    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = "config_change_"

    V1_ENTITY_TYPES: Final = (ConfigType.TOPICS, ConfigType.CLIENTS)

    @classmethod
    def written_version(cls, release: Release) -> int:
        if release_at_least(release, (0, 10, 1)):
            return 2
        if release_at_least(release, (0, 9)):
            return 1
        return 0

    @classmethod
    def encode(cls, value: ConfigChangeNotification | None, release: Release) -> bytes:
        if value is None:
            raise ValueError("nothing to encode: None is only a decode result")
        version = cls.written_version(release)
        if version == 2:
            return cj.dumps({"version": 2, "entity_path": value.entity_path})
        if version == 1:
            if value.entity_type not in cls.V1_ENTITY_TYPES or "/" in value.entity_name:
                raise ValueError(f"config change notification v1 cannot name {value.entity_path!r}")
            return cj.dumps(
                {"version": 1, "entity_type": value.entity_type, "entity_name": value.entity_name}
            )
        if value.entity_type != ConfigType.TOPICS:
            raise ValueError(
                f"pre-v1 config change notifications only name topics, not {value.entity_path!r}"
            )
        return cj.dumps(value.entity_name)

    @classmethod
    def decode(cls, data: bytes) -> ConfigChangeNotification | None:
        where = cls.PATTERN
        parsed: Any = cj.try_parse(data)
        if parsed is cj.UNPARSEABLE:
            return None
        if isinstance(parsed, str):
            return ConfigChangeNotification(ConfigType.TOPICS, parsed, 0)
        if not isinstance(parsed, dict):
            return None
        version = check_version(where, cj.get_int(parsed, "version", where), (1, 2))
        if version == 1:
            entity_type = cj.get_opt_str(parsed, "entity_type", where)
            if entity_type not in cls.V1_ENTITY_TYPES:
                raise ZnodeFormatError(
                    where, f"v1 entity_type must be 'topics' or 'clients', got {entity_type!r}"
                )
            name = cj.get_opt_str(parsed, "entity_name", where)
            if name is None:
                raise ZnodeFormatError(where, "v1 notification does not specify entity_name")
            return ConfigChangeNotification(entity_type, name, 1)
        entity_path = cj.get_opt_str(parsed, "entity_path", where)
        if entity_path is None:
            raise ZnodeFormatError(where, "v2 notification does not specify entity_path")
        entity_type, sep, name = entity_path.partition("/")
        if not sep or entity_type not in ConfigType.ALL:
            raise ZnodeFormatError(where, f"invalid entity_path {entity_path!r}")
        return ConfigChangeNotification(entity_type, name, 2)
