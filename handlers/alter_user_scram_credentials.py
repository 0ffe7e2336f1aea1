"""AlterUserScramCredentials (KIP-554), as a ZooKeeper-mode broker answers it
(`ZkAdminManager.alterUserScramCredentials`).

Only the active controller alters (others: NOT_CONTROLLER per user); ALTER on the cluster with
an authorizer. Per user, in Kafka's order: empty name UNACCEPTABLE_CREDENTIAL; a mechanism
other than 1/2 (SCRAM-SHA-256/512) UNSUPPORTED_SASL_MECHANISM; iterations outside 4096-16384
UNACCEPTABLE_CREDENTIAL; a (user, mechanism) twice DUPLICATE_RESOURCE; deleting a missing
credential RESOURCE_NOT_FOUND; a user with any error has nothing altered. The others'
`/config/users/<user>` (other keys kept) gets the ScramFormatter-derived credentials and a
change notification in one multi (`change_entity_config`), which every broker's credential
cache (`zkbroker.broker.security.credential_cache`) picks up.

Not emulated: throttling (`throttle_time_ms` is 0).
"""

from __future__ import annotations

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from zkbroker.broker.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_NAMES,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout import ConfigEntityNode, ConfigType, ZkStore, ZnodeFormatError, sanitize
from zkbroker.zk_layout.store.admin_zk import change_entity_config

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
ZK_TROUBLE_FAMILY = Family.CONTROLLER
README_NOTE = (
    "the controller writes `/config/users/<user>` + notification in one transaction; "
    "UNACCEPTABLE_CREDENTIAL, UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE, "
    "RESOURCE_NOT_FOUND, NOT_CONTROLLER"
)

EMPTY_USER = "Username must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
NOT_FOUND = "Attempt to delete a user credential that does not exist"


def _result(user: str, code: int, message: str | None) -> AlterUserScramCredentialsResult:
    return AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)


async def handle(
    ctx: RequestContext, request: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    if not auth.authorize_cluster(ctx, auth.ALTER):  # KafkaApis: authorize(ALTER, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    if not ctx.broker.is_controller:
        return error_response(request, ctx.version, error_codes.NOT_CONTROLLER, None)
    upsertions, deletions = request.upsertions, request.deletions
    illegal = _illegal(request)
    results = [
        _result(
            user,
            error_codes.UNSUPPORTED_SASL_MECHANISM
            if message == UNKNOWN_MECHANISM
            else error_codes.UNACCEPTABLE_CREDENTIAL,
            message,
        )
        for user, message in illegal.items()
    ]
    pairs = [(u.name, u.mechanism) for u in upsertions if u.name not in illegal] + [
        (d.name, d.mechanism) for d in deletions if d.name not in illegal
    ]
    duplicated = list(dict.fromkeys(user for user, _ in pairs if pairs.count((user, _)) > 1))
    results.extend(
        _result(user, error_codes.DUPLICATE_RESOURCE, ALTERED_TWICE) for user in duplicated
    )
    candidates = list(dict.fromkeys(user for user, _ in pairs if user not in duplicated))
    store = ctx.broker.store
    configs = await _read_configs(store, candidates)
    missing = list(
        dict.fromkeys(
            d.name
            for d in deletions
            if d.name in configs and MECHANISM_NAMES[d.mechanism] not in configs[d.name]
        )
    )
    results.extend(_result(user, error_codes.RESOURCE_NOT_FOUND, NOT_FOUND) for user in missing)
    for user in (u for u in candidates if u not in missing):
        props = _altered(configs[user], user, request)
        await change_entity_config(store, ConfigType.USERS, sanitize(user), props, ctx.release)
        results.append(_result(user, error_codes.NONE, None))
    return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)


def _illegal(request: AlterUserScramCredentialsRequest) -> dict[str, str]:
    """Kafka's illegalRequestsByUser: user -> message, deletions checked first."""
    illegal: dict[str, str] = {}
    for d in request.deletions:
        if not d.name:
            illegal[d.name] = EMPTY_USER
        elif d.mechanism not in MECHANISM_NAMES:
            illegal[d.name] = UNKNOWN_MECHANISM
    for u in request.upsertions:
        if not u.name:
            illegal[u.name] = EMPTY_USER
        elif u.mechanism not in MECHANISM_NAMES:
            illegal[u.name] = UNKNOWN_MECHANISM
        elif u.iterations > MAX_ITERATIONS:
            illegal[u.name] = "Too many iterations"
        elif u.iterations < MIN_ITERATIONS:
            illegal[u.name] = "Too few iterations"
    return illegal


async def _read_configs(store: ZkStore, users: list[str]) -> dict[str, dict[str, str]]:
    """Each user's `/config/users/<user>` properties; none for a missing or unreadable node."""
    configs: dict[str, dict[str, str]] = {}
    for user in users:
        got = await store.get(ConfigEntityNode.path(ConfigType.USERS, sanitize(user)))
        try:
            configs[user] = ConfigEntityNode.decode(got[0] or b"") if got is not None else {}
        except ZnodeFormatError:
            configs[user] = {}
    return configs


def _altered(
    props: dict[str, str], user: str, request: AlterUserScramCredentialsRequest
) -> dict[str, str]:
    """`props` with the user's deletions, then its upsertions, applied (other keys kept)."""
    for d in request.deletions:
        if d.name == user:
            props.pop(MECHANISM_NAMES[d.mechanism], None)
    for u in request.upsertions:
        if u.name == user:
            mechanism = MECHANISM_NAMES[u.mechanism]
            credential = credential_from_salted_password(
                mechanism, u.salt, u.salted_password, u.iterations
            )
            props[mechanism] = credential.to_text()
    return props


def error_response(
    request: AlterUserScramCredentialsRequest, version: int, code: int, message: str | None
) -> AlterUserScramCredentialsResponse:
    """Kafka's getErrorResponse: the error for every user named, once each."""
    users = dict.fromkeys(
        [u.name for u in request.upsertions] + [d.name for d in request.deletions]
    )
    text = message if message is not None else error_codes.DEFAULT_MESSAGES.get(code)
    return AlterUserScramCredentialsResponse(
        throttle_time_ms=0, results=[_result(user, code, text) for user in users]
    )
