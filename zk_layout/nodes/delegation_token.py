"""Delegation tokens in ZooKeeper (KIP-48), as Kafka's `ZkData` and `DelegationTokenManagerZk` lay
them out (docs/kafka-behaviour.md §18, "Storage"):

* `/delegation_token` with `tokens` and `token_changes` (`DelegationTokenAuthZNode`);
* `/delegation_token/tokens/<tokenId>`: the token's information as JSON, never its HMAC;
  principals as `Sanitizer`'d `Type:name`; version 1 up to 3.2, version 3 (with
  `tokenRequester`, KIP-373) from 3.3;
* `/delegation_token/token_changes/token_change_<seq>`: a change notification holding the
  token id.

Not here: the HMAC and the token cache (`zkbroker.broker.security.delegation_tokens`), and
processing notifications.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, SequenceMixin, ZNode
from zkbroker.zk_layout.release import Release, release_at_least
from zkbroker.zk_layout.sanitizer import desanitize, sanitize

#: The release whose brokers write version 3 (tokenRequester, KIP-373).
TOKEN_REQUESTER_SINCE: tuple[int, int] = (3, 3)


@dataclass(frozen=True)
class Principal:
    """A Kafka principal, ``Type:name`` (``SecurityUtils.parseKafkaPrincipal``)."""

    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Principal:
        """``User:alice``; ValueError without a ':' (Kafka's IllegalArgumentException)."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(
                f"expected a string in format principalType:principalName but got {text}"
            )
        return cls(kind, name)


@dataclass(frozen=True)
class TokenInformation:
    """Kafka's ``TokenInformation``: what a token znode holds."""

    token_id: str
    owner: Principal
    token_requester: Principal
    renewers: tuple[Principal, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int

    def owner_or_renewer(self, principal: Principal) -> bool:
        return (
            principal == self.owner
            or principal == self.token_requester
            or (principal in self.renewers)
        )


class DelegationTokenAuthNode(EmptyNode, name="delegation_token"):
    """``/delegation_token``: parent of the tokens and of their change notifications."""


class DelegationTokensNode(EmptyNode, parent=DelegationTokenAuthNode, name="tokens"):
    """``/delegation_token/tokens``: one child per token."""


class DelegationTokenChangesNode(EmptyNode, parent=DelegationTokenAuthNode, name="token_changes"):
    """``/delegation_token/token_changes``: every broker watches its children."""


class DelegationTokenInfoNode(
    ZNode[TokenInformation], parent=DelegationTokensNode, name="{tokenId}"
):
    """``/delegation_token/tokens/<tokenId>``: ``path(token_id)``."""

    FORMAT_VERSIONS = (1, 2, 3)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 3 if release_at_least(release, TOKEN_REQUESTER_SINCE) else 1

    @classmethod
    def encode(cls, value: TokenInformation, release: Release) -> bytes:
        version = cls.written_version(release)
        data: dict[str, Any] = {"version": version, "owner": sanitize(str(value.owner))}
        if version >= 3:
            data["tokenRequester"] = sanitize(str(value.token_requester))
        data["renewers"] = [sanitize(str(r)) for r in value.renewers]
        data["issueTimestamp"] = value.issue_timestamp
        data["maxTimestamp"] = value.max_timestamp
        data["expiryTimestamp"] = value.expiry_timestamp
        data["tokenId"] = value.token_id
        return cj.dumps(data)

    @classmethod
    def decode(cls, data: bytes) -> TokenInformation:
        where = cls.PATTERN
        obj = cj.parse_object(data, where)
        version = cj.get_int(obj, "version", where)
        if not 0 < version <= 3:  # Kafka: require(version > 0 && version <= CurrentVersion)
            raise ZnodeFormatError(where, f"unknown version {version}")

        def principal(text: Any, what: str) -> Principal:
            try:
                return Principal.parse(desanitize(cj.check_str(text, where, what)))
            except ValueError as e:
                raise ZnodeFormatError(where, str(e)) from None

        owner = principal(cj.require(obj, "owner", where), "owner")
        requester = owner
        if version >= 3:
            requester = principal(cj.require(obj, "tokenRequester", where), "tokenRequester")
        renewers = tuple(principal(r, "renewers") for r in cj.get_list(obj, "renewers", where))
        return TokenInformation(
            token_id=cj.get_str(obj, "tokenId", where),
            owner=owner,
            token_requester=requester,
            renewers=renewers,
            issue_timestamp=cj.get_int(obj, "issueTimestamp", where, bits=64),
            max_timestamp=cj.get_int(obj, "maxTimestamp", where, bits=64),
            expiry_timestamp=cj.get_int(obj, "expiryTimestamp", where, bits=64),
        )


class DelegationTokenChangeNode(SequenceMixin, ZNode[str], parent=DelegationTokenChangesNode):
    """``token_change_<seq>``: the changed token's id."""

    FORMAT_VERSIONS = (0,)
    KIND = NodeKind.PERSISTENT_SEQUENTIAL
    PREFIX = "token_change_"

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 0

    @classmethod
    def encode(cls, value: str, release: Release) -> bytes:
        return value.encode("utf-8")

    @classmethod
    def decode(cls, data: bytes) -> str:
        return data.decode("utf-8", errors="replace")
