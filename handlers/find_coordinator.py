"""FindCoordinator (key 10), versions 0-6.

Kafka (3.9 ``KafkaApis.getCoordinator``) answers the leader of the ``__consumer_offsets``
partition the group id hashes to. Here the group's coordinator is a live broker chosen by the
same hash (``broker.groups.zk_registry.coordinator_id``):
- GROUP key type: that broker's endpoint on the listener the request came in on;
  COORDINATOR_NOT_AVAILABLE (node -1, host "", port -1) when no broker is alive or the chosen
  one has no endpoint on this listener;
- TRANSACTION: COORDINATOR_NOT_AVAILABLE, what Kafka answers while ``__transaction_state`` does
  not exist (it asks for the topic's creation and answers 15; zkbroker has no transaction
  coordinator, so the topic never appears);
- SHARE (v6): INVALID_REQUEST below v6, else COORDINATOR_NOT_AVAILABLE, as 3.9 answers;
- any other key type: the whole request fails with INVALID_REQUEST.
Below v4 one key is answered at the top level with ``error_message`` = the code's message
("NONE" on success); from v4 each of ``coordinator_keys`` gets a ``Coordinator`` entry whose
message is left empty, except in whole-request errors.

Once ``__consumer_offsets`` exists (created by the first JoinGroup, ``handlers.join_group``),
a GROUP key is answered as Kafka does: the leader of partition ``abs(hashCode) % partitions``
of that topic, COORDINATOR_NOT_AVAILABLE while it has no live leader on this listener
(docs/kafka-behaviour.md §16).

Not emulated: authorization (GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from broker.groups.zk_registry import coordinator_id
from broker.protocol import error_codes
from broker.protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from handlers.context import RequestContext
from handlers.metadata import reachable_brokers
from handlers.support.group_coordination import coordinator as group_coordinator

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 6

GROUP = 0
TRANSACTION = 1
SHARE = 2

_MESSAGES = {
    error_codes.NONE: "NONE",
    error_codes.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    error_codes.INVALID_REQUEST: error_codes.DEFAULT_MESSAGES[error_codes.INVALID_REQUEST],
}
_NO_NODE = (-1, "", -1)


class _UnknownKeyType(Exception):
    pass


def _lookup(
    ctx: RequestContext, reachable: dict[int, tuple[str, int]], key_type: int, key: str
) -> tuple[int, tuple[int, str, int]]:
    if key_type == GROUP:
        gc = group_coordinator(ctx)
        partition = gc.partition_for(key)
        if partition is not None:
            leader = gc.leader_of(partition)[0]
            chosen = leader if leader in ctx.image.brokers else None
        else:
            chosen = coordinator_id(key, ctx.image.brokers)
        endpoint = None if chosen is None else reachable.get(chosen)
        if chosen is None or endpoint is None:
            return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
        return error_codes.NONE, (chosen, *endpoint)
    if key_type == TRANSACTION:
        return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    if key_type == SHARE:
        if ctx.version < 6:
            return error_codes.INVALID_REQUEST, _NO_NODE
        return error_codes.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    raise _UnknownKeyType(key_type)


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.version
    key_type = request.key_type if version >= 1 else GROUP
    # Looked up once per request: every key of a v4+ request is answered from the same image.
    reachable = reachable_brokers(ctx.image, ctx.connection.listener_name)
    try:
        if version < 4:
            code, (node_id, host, port) = _lookup(ctx, reachable, key_type, request.key)
            if code != error_codes.NONE:
                return error_response(request, version, code, None)
            return FindCoordinatorResponse(
                error_code=code,
                error_message=_MESSAGES[code],
                node_id=node_id,
                host=host,
                port=port,
            )
        coordinators = []
        for key in request.coordinator_keys:
            code, (node_id, host, port) = _lookup(ctx, reachable, key_type, key)
            coordinators.append(
                Coordinator(key=key, node_id=node_id, host=host, port=port, error_code=code)
            )
        return FindCoordinatorResponse(coordinators=coordinators)
    except _UnknownKeyType:
        return error_response(request, version, error_codes.INVALID_REQUEST, None)


def error_response(
    request: FindCoordinatorRequest, version: int, code: int, message: str | None
) -> FindCoordinatorResponse:
    text = _MESSAGES.get(code, error_codes.DEFAULT_MESSAGES.get(code))
    node_id, host, port = _NO_NODE
    if version < 4:
        return FindCoordinatorResponse(
            error_code=code, error_message=text, node_id=node_id, host=host, port=port
        )
    return FindCoordinatorResponse(
        coordinators=[
            Coordinator(
                key=key, node_id=node_id, host=host, port=port, error_code=code, error_message=text
            )
            for key in request.coordinator_keys
        ]
    )
