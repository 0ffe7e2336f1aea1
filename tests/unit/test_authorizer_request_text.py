"""ClusterAuthorizationException's text: "Request $request is not authorized." with the request
as each release's RequestChannel.Request prints it (zkbroker.broker.rules.request_description)."""

from __future__ import annotations

import pytest

from zkbroker.broker.rules.request_description import (
    ConnectionSlot,
    RequestFacts,
    connection_id,
    java_host_address,
    not_authorized_message,
    processor_of,
)


def _facts(api_key: int, size: int = 57) -> RequestFacts:
    return RequestFacts(
        processor=1,
        connection_id="127.0.0.1:9092-127.0.0.1:50412-0",
        principal="User:alice",
        client_host="127.0.0.1",
        listener_name="SASL_PLAINTEXT",
        security_protocol="SASL_PLAINTEXT",
        api_key=api_key,
        size=size,
        received_ms=1700000000000,
        received_ns=123456789,
    )


def test_a_forwardable_api_keeps_its_buffer_in_3_9() -> None:
    # CreateAcls (30) is forwardable: the buffer is printed, read to its end.
    assert not_authorized_message((3, 9), _facts(30)) == (
        "Request Request(processor=1, connectionId=127.0.0.1:9092-127.0.0.1:50412-0, "
        "session=Session(User:alice,/127.0.0.1), listenerName=ListenerName(SASL_PLAINTEXT), "
        "securityProtocol=SASL_PLAINTEXT, buffer=java.nio.HeapByteBuffer[pos=57 lim=57 cap=57], "
        "envelope=None) is not authorized."
    )


def test_other_apis_print_a_released_buffer() -> None:
    # DescribeAcls (29) is not forwardable; ListPartitionReassignments (46) only from 3.0.
    assert "buffer=null, envelope=None) is not authorized." in not_authorized_message(
        (3, 9), _facts(29)
    )
    assert "buffer=null, envelope=None)" in not_authorized_message((2, 8), _facts(46))
    assert "buffer=java.nio" in not_authorized_message((3, 0), _facts(46))


def test_before_2_8_there_is_no_envelope_and_no_retained_buffer() -> None:
    assert not_authorized_message((2, 7), _facts(30)).endswith(
        "securityProtocol=SASL_PLAINTEXT, buffer=null) is not authorized."
    )


@pytest.mark.parametrize(
    ("release", "text"),
    [
        (
            (0, 11),
            "Request(1,127.0.0.1:9092-127.0.0.1:50412-0,Session(User:alice,/127.0.0.1),null,"
            "123456789,ListenerName(SASL_PLAINTEXT),SASL_PLAINTEXT)",
        ),
        (
            (0, 10, 1),
            "Request(1,127.0.0.1:9092-127.0.0.1:50412-0,Session(User:alice,/127.0.0.1),null,"
            "1700000000000,SASL_PLAINTEXT)",
        ),
    ],
)
def test_old_releases_print_the_case_class(release: tuple[int, ...], text: str) -> None:
    assert not_authorized_message(release, _facts(30)) == f"Request {text} is not authorized."


def test_connection_ids_and_processors_as_kafkas_socket_server() -> None:
    assert connection_id((3, 9), ("127.0.0.1", 9092), ("127.0.0.1", 5000), 4) == (
        "127.0.0.1:9092-127.0.0.1:5000-4"
    )
    assert connection_id((0, 11), ("127.0.0.1", 9092), ("127.0.0.1", 5000), 4) == (
        "127.0.0.1:9092-127.0.0.1:5000"
    )
    # Round robin over num.network.threads processors, numbered across listeners.
    slots = [processor_of(n, 1, 3) for n in range(5)]
    assert slots == [
        ConnectionSlot(3, 0),
        ConnectionSlot(4, 0),
        ConnectionSlot(5, 0),
        ConnectionSlot(3, 1),
        ConnectionSlot(4, 1),
    ]


@pytest.mark.parametrize(
    ("given", "java"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("fe80::a:b%eth0", "fe80:0:0:0:0:0:a:b%eth0"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("localhost", "localhost"),
    ],
)
def test_addresses_print_as_getHostAddress(given: str, java: str) -> None:
    assert java_host_address(given) == java
