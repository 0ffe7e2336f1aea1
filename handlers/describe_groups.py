"""DescribeGroups: groups of the group coordinator and of the ZooKeeper consumer registry.

Per group id, as 3.9's `GroupCoordinator.handleDescribeGroup` answers (docs/kafka-behaviour.md
§5), authorization and `authorized_operations` included. A group the coordinator holds is
described from it (`GroupMetadata.summary`, §16); otherwise from the registry
(`zkbroker.broker.groups.zk_registry`, §16 "zkbroker's deviations"): protocol type `consumer`,
state Stable (protocol `range`) or Empty, or Dead without `/consumers/<g>`.
"""

from __future__ import annotations

import re

from zkbroker.broker.groups.zk_registry import (
    ASSIGNMENT_STRATEGY,
    DEAD,
    PROTOCOL_TYPE,
    STABLE,
    ConsumerGroup,
    load_groups,
    subscribed_topics,
)
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.consumer_protocol import encode_assignment, encode_subscription
from zkbroker.broker.protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from zkbroker.broker.rules.groups.classic_group import ClassicGroup, GroupState
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    classic_group_known,
    coordinator,
    group_status,
)
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_GROUPS
ZK_TROUBLE_FAMILY = Family.GROUPS
README_NOTE = (
    "coordinator groups: state, protocol, members with their metadata and assignments; "
    "`/consumers` groups: members from `/consumers/<g>/ids`; unknown → `Dead`"
)

_GENERATED_ID = re.compile(r"(?P<host>.+)-\d+-[0-9a-f]{8}")


def client_host(group_id: str, consumer_id: str) -> str:
    """``/<host>`` from an old consumer's generated id, "" for any other id."""
    prefix = f"{group_id}_"
    if consumer_id.startswith(prefix):
        match = _GENERATED_ID.fullmatch(consumer_id[len(prefix) :])
        if match is not None:
            return "/" + match["host"]
    return ""


def _describe(group: ConsumerGroup, topics: list[str]) -> DescribedGroup:
    # A registry group as the group APIs show it: members are /consumers/<g>/ids/* in id
    # order; client id = the group id (the old consumer's default client.id); metadata = a v0
    # Subscription of the registered topics (patterns expanded against this broker's topics);
    # assignment = a v0 Assignment of what the member's threads own under owners/. An
    # unreadable registration gives an empty subscription.
    members = []
    for member_id, registration in group.members.items():
        subscribed = subscribed_topics(registration, topics) if registration is not None else []
        members.append(
            DescribedGroupMember(
                member_id=member_id,
                group_instance_id=None,
                client_id=group.group_id,
                client_host=client_host(group.group_id, member_id),
                member_metadata=encode_subscription(subscribed),
                member_assignment=encode_assignment(group.assignment(member_id)),
            )
        )
    return DescribedGroup(
        error_code=error_codes.NONE,
        group_id=group.group_id,
        group_state=group.state,
        protocol_type=PROTOCOL_TYPE,
        protocol_data=ASSIGNMENT_STRATEGY if group.state == STABLE else "",
        members=members,
    )


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    answers: dict[int, DescribedGroup] = {}
    to_load: list[tuple[int, str]] = []
    for index, group_id in enumerate(request.groups):
        code = group_status(ctx, group_id)
        if not auth.authorize(ctx, auth.DESCRIBE, auth.GROUP, group_id):  # KafkaApis
            answers[index] = _error(group_id, error_codes.GROUP_AUTHORIZATION_FAILED)
        elif code != error_codes.NONE:
            answers[index] = _error(group_id, code)
        elif classic_group_known(ctx, group_id):
            found = coordinator(ctx).machine.group(group_id)
            assert found is not None
            answers[index] = _describe_classic(found)
        else:
            to_load.append((index, group_id))
    if to_load:
        loaded = await load_groups(ctx.broker.store, [g for _, g in to_load], with_owners=True)
        topics = [t.name for t in ctx.image.visible_topics()]
        for index, group_id in to_load:
            group = loaded[group_id]
            answers[index] = (
                _describe(group, topics)
                if group is not None
                else DescribedGroup(
                    error_code=error_codes.NONE, group_id=group_id, group_state=DEAD
                )
            )
    described = [answers[i] for i in range(len(request.groups))]
    if ctx.version >= 3 and request.include_authorized_operations and auth.has_authorizer(ctx):
        # KafkaApis: the principal's operations on each group it may describe (KIP-430).
        for answer in described:
            if answer.error_code != error_codes.GROUP_AUTHORIZATION_FAILED:
                answer.authorized_operations = auth.authorized_operations(
                    ctx, auth.GROUP, answer.group_id
                )
    return DescribeGroupsResponse(groups=described)


def _describe_classic(group: ClassicGroup) -> DescribedGroup:
    stable = group.is_state(GroupState.STABLE)
    protocol = group.protocol_name or ""
    return DescribedGroup(
        error_code=error_codes.NONE,
        group_id=group.group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=protocol if stable else "",
        members=[
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(protocol) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ],
    )


def _error(group_id: str, code: int) -> DescribedGroup:
    return DescribedGroup(error_code=code, group_id=group_id, group_state="", members=[])


def error_response(
    request: DescribeGroupsRequest, version: int, code: int, message: str | None
) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[_error(g, code) for g in request.groups])
