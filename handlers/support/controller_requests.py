"""The preamble of the APIs only the active controller answers (AllocateProducerIds,
AlterPartition, BrokerHeartbeat, BrokerRegistration, ControlledShutdown, and the partition
reassignment APIs).

As KafkaApis handles them in ZooKeeper mode: an operation on the cluster (CLUSTER_ACTION for
the inter-broker ones, ALTER or DESCRIBE for the reassignment APIs), else
CLUSTER_AUTHORIZATION_FAILED; a broker that is not the active controller answers
NOT_CONTROLLER, as does a controller that moves while the request waits
(ControllerMovedException). The work itself runs as a named controller event.

Deliberately not here: the per-API checks and answers (each handler module).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from zkbroker.broker.protocol import error_codes
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.zk_layout import ControllerMovedError

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

Req = TypeVar("Req")
Resp = TypeVar("Resp")
T = TypeVar("T")


async def on_controller(
    ctx: RequestContext,
    request: Req,
    error_response: Callable[[Req, int, int, str | None], Resp],
    event: str,
    work: Callable[[Controller], Awaitable[T]],
    answer: Callable[[T], Resp],
    check: Callable[[], int] | None = None,
    operation: int = auth.CLUSTER_ACTION,
) -> Resp:
    """Authorize `operation` on the cluster, refuse unless this broker is the controller, run
    `check` (an error code), then `work` as the controller event `event`, and `answer` its
    outcome."""
    if not auth.authorize_cluster(ctx, operation):  # KafkaApis: authorizeClusterOperation
        return error_response(
            request,
            ctx.version,
            error_codes.CLUSTER_AUTHORIZATION_FAILED,
            auth.cluster_denied_message(ctx, operation),
        )
    controller = ctx.broker.controller
    if controller is None:
        return error_response(request, ctx.version, error_codes.NOT_CONTROLLER, None)
    if check is not None:
        code = check()
        if code != error_codes.NONE:
            return error_response(request, ctx.version, code, None)
    try:
        outcome = await controller.call(event, work)
    except ControllerMovedError:
        return error_response(request, ctx.version, error_codes.NOT_CONTROLLER, None)
    return answer(outcome)
