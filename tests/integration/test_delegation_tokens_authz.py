"""Authorization of the delegation-token APIs with Kafka's AclAuthorizer on (KafkaApis
handleCreateTokenRequest / handleDescribeTokensRequest, DelegationTokenManager.filterToken;
docs/kafka-behaviour.md §18), over SASL principals on a real ZooKeeper: a token for another owner
needs CREATE_TOKENS on `User:<owner>`; Describe lists others' tokens only with DESCRIBE on
`DelegationToken:<id>` or DESCRIBE_TOKENS on `User:<owner>`. The ACLs are created by a super user
through kafka-python's admin client (the only installed client that knows the User and
DelegationToken resource types); the token requests go through the wire client, as no Python or C
client exposes them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
)

from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.messages.create_delegation_token import CreateDelegationTokenRequest
from zkbroker.broker.protocol.messages.describe_delegation_token import (
    DescribeDelegationTokenRequest,
)
from zkbroker.broker.protocol.messages.renew_delegation_token import RenewDelegationTokenRequest
from zkbroker.broker.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from zkbroker.broker.protocol.messages.sasl_handshake import SaslHandshakeRequest
from zkbroker.broker.security.cluster_security import Security
from zkbroker.broker.toolkit.wire import WireClient
from zkbroker.broker.toolkit.zookeeper import ZooKeeperEndpoint, fresh_chroot

USERS = {
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",
    "dave": "dave-secret",
}


@pytest.fixture(scope="module")
def authz_cluster(zk_test_zookeeper: ZooKeeperEndpoint) -> Iterator[Cluster]:
    with Cluster(
        brokers=1,
        port=0,
        zookeeper=fresh_chroot(zk_test_zookeeper.connect_string),
        security=Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",), users=USERS),
        kafka_version="3.9",
        broker_configs=(
            ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"),
            ("super.users", "User:admin"),
            ("delegation.token.secret.key", "authz-token-secret"),
        ),
    ) as cluster:
        yield cluster


def _plain(cluster: Cluster, user: str) -> WireClient:
    client = WireClient.to(cluster.bootstrap_servers.split(",")[0])
    assert client.request(1, SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
    token = f"\0{user}\0{USERS[user]}".encode()
    assert client.request(2, SaslAuthenticateRequest(auth_bytes=token)).error_code == 0
    return client


def _create(cluster: Cluster, user: str, owner: str | None = None) -> Any:
    with _plain(cluster, user) as client:
        return client.request(
            3,
            CreateDelegationTokenRequest(
                owner_principal_type="User" if owner else None,
                owner_principal_name=owner,
                renewers=[],
                max_lifetime_ms=-1,
            ),
        )


def _described(cluster: Cluster, user: str) -> set[str]:
    with _plain(cluster, user) as client:
        answer = client.request(3, DescribeDelegationTokenRequest(owners=None))
    assert answer.error_code == error_codes.NONE
    return {t.token_id for t in answer.tokens}


def _allow(cluster: Cluster, user: str, op: ACLOperation, kind: ResourceType, name: str) -> None:
    """A literal ALLOW ACL created by the super user through kafka-python's admin client."""
    assert cluster.security is not None
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers,
        **cluster.security.client_config("kafka-python", "admin", "PLAIN"),
    )
    try:
        acl = ACL(
            principal=f"User:{user}",
            host="*",
            operation=op,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(kind, name, ACLResourcePatternType.LITERAL),
        )
        result = admin.create_acls([acl])
        assert result["failed"] == [] and len(result["succeeded"]) == 1
    finally:
        admin.close()


def test_a_token_for_another_owner_needs_create_tokens(authz_cluster: Cluster) -> None:
    denied = _create(authz_cluster, "alice", owner="bob")
    assert denied.error_code == error_codes.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (denied.principal_name, denied.token_requester_principal_name) == ("bob", "alice")
    assert (denied.token_id, denied.hmac, denied.issue_timestamp_ms) == ("", b"", -1)
    # One's own token needs no ACL; a super user may create for anyone.
    assert _create(authz_cluster, "alice").error_code == error_codes.NONE
    assert _create(authz_cluster, "admin", owner="carol").error_code == error_codes.NONE

    # The resource is the owner principal's text, `User:bob`.
    _allow(authz_cluster, "alice", ACLOperation.CREATE_TOKENS, ResourceType.USER, "User:bob")
    allowed = _create(authz_cluster, "alice", owner="bob")
    assert allowed.error_code == error_codes.NONE
    assert (allowed.principal_name, allowed.token_requester_principal_name) == ("bob", "alice")
    # ... for bob only; DESCRIBE_TOKENS does not imply CREATE_TOKENS.
    _allow(authz_cluster, "alice", ACLOperation.DESCRIBE_TOKENS, ResourceType.USER, "User:carol")
    other = _create(authz_cluster, "alice", owner="carol")
    assert other.error_code == error_codes.DELEGATION_TOKEN_AUTHORIZATION_FAILED


def test_describe_filters_tokens_by_acl(authz_cluster: Cluster) -> None:
    bobs = _create(authz_cluster, "admin", owner="bob")
    carols = _create(authz_cluster, "admin", owner="carol")
    assert bobs.error_code == carols.error_code == error_codes.NONE
    mine = {bobs.token_id, carols.token_id}

    # Neither owner, requester nor renewer, and no ACL: nothing of theirs.
    assert _described(authz_cluster, "dave") & mine == set()
    # Owners see their own; the super user (the requester here) sees both.
    assert _described(authz_cluster, "bob") & mine == {bobs.token_id}
    assert _described(authz_cluster, "admin") & mine == mine

    # DESCRIBE on one token shows that token only.
    _allow(
        authz_cluster, "dave", ACLOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, carols.token_id
    )
    assert _described(authz_cluster, "dave") & mine == {carols.token_id}
    # DESCRIBE_TOKENS on an owner shows every token of that owner.
    _allow(authz_cluster, "dave", ACLOperation.DESCRIBE_TOKENS, ResourceType.USER, "User:bob")
    assert _described(authz_cluster, "dave") & mine == mine

    # An ACL to describe a token gives no right to renew it (owner or renewer only).
    with _plain(authz_cluster, "dave") as dave:
        renew = dave.request(2, RenewDelegationTokenRequest(hmac=bobs.hmac, renew_period_ms=1000))
    assert renew.error_code == error_codes.DELEGATION_TOKEN_OWNER_MISMATCH
