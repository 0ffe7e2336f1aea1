"""OffsetFetch: committed offsets, from the group coordinator or from the ZooKeeper registry
(``/consumers/<g>/offsets/<t>/<p>``).

Follows docs/kafka-behaviour.md §16 ("OffsetFetch", "zkbroker's deviations": a group the
coordinator holds answers from it, others from the registry), §17 for ``require_stable``,
authorization included. Registry offsets carry metadata "" and leader epoch -1 (the registry
stores the bare offset).

Not emulated: v9's member id and epoch checks (KIP-848 groups; these groups are classic).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from zkbroker.broker.groups.zk_registry import load_groups
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    classic_group_known,
    coordinator,
    group_status,
)
from zkbroker.handlers.support.zk_trouble import Family
from zkbroker.zk_layout.nodes.base import TopicPartition

API_KEY = ApiKey.OFFSET_FETCH
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "coordinator groups from `__consumer_offsets` (metadata, leader epoch); "
    "`/consumers/<g>/offsets/<t>/<p>`; null topics = all (v2+); several groups (v8+)"
)

INVALID_OFFSET = -1
REQUIRE_STABLE_VERSION = 7  # KIP-447

T = TypeVar("T")

# topic -> partitions requested, or None for all
Wanted = dict[str, list[int]] | None


@dataclass(frozen=True, slots=True)
class Committed:
    """What is answered for one committed offset."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""


# (partition, committed offset, leader epoch, metadata, error)
Row = tuple[int, int, int, str, int]


def _wanted(
    topics: Sequence[OffsetFetchRequestTopic] | Sequence[OffsetFetchRequestTopics] | None,
) -> Wanted:
    if topics is None:
        return None
    out: dict[str, list[int]] = {}
    for t in topics:
        out.setdefault(t.name, []).extend(t.partition_indexes)
    return out


def _answer(
    offsets: Mapping[TopicPartition, Committed],
    wanted: Wanted,
    missing_code: int,
    unstable: Callable[[TopicPartition], bool] | None = None,
) -> dict[str, list[Row]]:
    """topic -> rows for the wanted partitions (all when None)."""
    out: dict[str, list[Row]] = {}
    if wanted is None:
        for tp, c in sorted(offsets.items()):
            out.setdefault(tp.topic, []).append(
                (tp.partition, c.offset, c.leader_epoch, c.metadata, error_codes.NONE)
            )
        return out
    for topic, partitions in wanted.items():
        rows = out.setdefault(topic, [])
        for p in partitions:
            found = offsets.get(TopicPartition(topic, p))
            if unstable is not None and unstable(TopicPartition(topic, p)):
                rows.append((p, INVALID_OFFSET, -1, "", error_codes.UNSTABLE_OFFSET_COMMIT))
            elif found is None:
                rows.append((p, INVALID_OFFSET, -1, "", missing_code))
            else:
                rows.append((p, found.offset, found.leader_epoch, found.metadata, error_codes.NONE))
    return out


def _authorized_answer(
    ctx: RequestContext,
    offsets: Mapping[TopicPartition, Committed],
    wanted: Wanted,
    missing_code: int,
    unstable: Callable[[TopicPartition], bool] | None = None,
) -> dict[str, list[Row]]:
    """`_answer` with DESCRIBE on each topic (fetchOffsetsForGroup / fetchAllOffsetsForGroup)."""
    if not auth.has_authorizer(ctx):
        return _answer(offsets, wanted, missing_code, unstable)
    if wanted is None:
        answer = _answer(offsets, None, missing_code, unstable)
        allowed = auth.filter_authorized(ctx, auth.DESCRIBE, auth.TOPIC, answer)
        return {t: rows for t, rows in answer.items() if t in allowed}
    allowed = auth.filter_authorized(ctx, auth.DESCRIBE, auth.TOPIC, wanted)
    answer = _answer(
        offsets, {t: ps for t, ps in wanted.items() if t in allowed}, missing_code, unstable
    )
    denied = error_codes.TOPIC_AUTHORIZATION_FAILED
    for t, ps in wanted.items():
        if t not in allowed:
            answer[t] = [(p, INVALID_OFFSET, -1, "", denied) for p in ps]
    return answer


def _group_denied(ctx: RequestContext, group_id: str) -> bool:
    return not auth.authorize(ctx, auth.DESCRIBE, auth.GROUP, group_id)


def _render(
    answer: dict[str, list[Row]],
    topic_cls: Callable[..., T],
    partition_cls: Callable[..., object],
) -> list[T]:
    """Response topics of ``answer``, in the message classes of the request's version (the
    leader epoch is only written from v5, where the field exists)."""
    return [
        topic_cls(
            name=topic,
            partitions=[
                partition_cls(
                    partition_index=p,
                    committed_offset=o,
                    committed_leader_epoch=epoch,
                    metadata=metadata,
                    error_code=e,
                )
                for p, o, epoch, metadata, e in rows
            ],
        )
        for topic, rows in answer.items()
    ]


def _topics(answer: dict[str, list[Row]]) -> list[OffsetFetchResponseTopic]:
    return _render(answer, OffsetFetchResponseTopic, OffsetFetchResponsePartition)


async def _offsets(
    ctx: RequestContext, group_ids: Sequence[str]
) -> dict[str, Mapping[TopicPartition, Committed]]:
    """group -> committed offsets (none for a group that does not exist), in one load."""
    classic = {g for g in group_ids if classic_group_known(ctx, g)}
    out: dict[str, Mapping[TopicPartition, Committed]] = {}
    for g in classic:
        committed = coordinator(ctx).machine.fetch_offsets(g, None)
        out[g] = {
            TopicPartition(t, p): Committed(v.offset, v.leader_epoch, v.metadata)
            for (t, p), v in committed.items()
            if v
        }
    rest = [g for g in group_ids if g not in classic]
    if rest:
        loaded = await load_groups(ctx.broker.store, rest, with_offsets=True)
        for g, group in loaded.items():
            bare = group.offsets if group is not None else {}
            out[g] = {tp: Committed(offset) for tp, offset in bare.items()}
    return out


def _unstable(
    ctx: RequestContext, group_id: str, require_stable: bool
) -> Callable[[TopicPartition], bool] | None:
    if not require_stable or not classic_group_known(ctx, group_id):
        return None
    machine = coordinator(ctx).machine
    return lambda tp: machine.unstable_offset(group_id, (tp.topic, tp.partition))


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.version
    if version >= 8:
        codes = {
            entry.group_id: error_codes.GROUP_AUTHORIZATION_FAILED
            if _group_denied(ctx, entry.group_id)
            else group_status(ctx, entry.group_id)
            for entry in request.groups
        }
        offsets = await _offsets(ctx, [g for g, code in codes.items() if code == error_codes.NONE])
        groups = []
        for entry in request.groups:
            code = codes[entry.group_id]
            if code != error_codes.NONE:
                groups.append(OffsetFetchResponseGroup(group_id=entry.group_id, error_code=code))
                continue
            answer = _authorized_answer(
                ctx,
                offsets[entry.group_id],
                _wanted(entry.topics),
                error_codes.NONE,
                _unstable(ctx, entry.group_id, request.require_stable),
            )
            topics = _render(answer, OffsetFetchResponseTopics, OffsetFetchResponsePartitions)
            groups.append(OffsetFetchResponseGroup(group_id=entry.group_id, topics=topics))
        return OffsetFetchResponse(groups=groups)

    wanted = _wanted(request.topics)
    if _group_denied(ctx, request.group_id):
        return error_response(request, version, error_codes.GROUP_AUTHORIZATION_FAILED, None)
    if version == 0:
        offsets_v0 = dict((await _offsets(ctx, [request.group_id]))[request.group_id])
        image = ctx.image
        for topic, partitions in (wanted or {}).items():
            known = image.topics.get(topic)
            for p in partitions:
                if known is None or p not in known.partitions:
                    offsets_v0.pop(TopicPartition(topic, p), None)
        answer = _authorized_answer(
            ctx, offsets_v0, wanted or {}, error_codes.UNKNOWN_TOPIC_OR_PARTITION
        )
        return OffsetFetchResponse(topics=_topics(answer))

    code = group_status(ctx, request.group_id)
    if code != error_codes.NONE:
        return error_response(request, version, code, None)
    committed = (await _offsets(ctx, [request.group_id]))[request.group_id]
    stable = version >= REQUIRE_STABLE_VERSION and request.require_stable
    answer = _authorized_answer(
        ctx, committed, wanted, error_codes.NONE, _unstable(ctx, request.group_id, stable)
    )
    return OffsetFetchResponse(topics=_topics(answer), error_code=error_codes.NONE)


def error_response(
    request: OffsetFetchRequest, version: int, code: int, message: str | None
) -> OffsetFetchResponse:
    """Kafka's ``OffsetFetchRequest.getErrorResponse``: below v2 the error on every requested
    partition, v2-7 the top-level error only, v8+ each group's error."""
    if version >= 8:
        return OffsetFetchResponse(
            groups=[
                OffsetFetchResponseGroup(group_id=g.group_id, error_code=code)
                for g in request.groups
            ]
        )
    if version < 2:
        wanted = _wanted(request.topics) or {}
        rows: dict[str, list[Row]] = {
            t: [(p, INVALID_OFFSET, -1, "", code) for p in ps] for t, ps in wanted.items()
        }
        return OffsetFetchResponse(topics=_topics(rows))
    return OffsetFetchResponse(error_code=code, topics=[])
