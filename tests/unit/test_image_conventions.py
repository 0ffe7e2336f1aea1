"""The image's Confluent and Bitnami conventions (issue 44): `detect`'s rules, cp-kafka's
env_to_props rule, exclusions, checks and defaults, Bitnami's KAFKA_CFG_* rule, aliases and mode
checks, the two ZooKeeper conventions, Java properties as zkbroker reads them back, and the
command the image's shims call (`zk-ready` against sockets of the test's own)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from zkbroker.broker.cli import image_conventions as ic
from zkbroker.broker.cli.image_conventions import (
    bind_all,
    bitnami_property_name,
    clean_listeners,
    confluent_property_name,
    detect,
    kafka_config,
    main,
    render_properties,
    zookeeper_config,
    zookeeper_hosts,
    zookeeper_ready,
)
from zkbroker.broker.cli.main import build_parser
from zkbroker.broker.cli.properties_file import read_broker_config_file

R39 = (3, 9)


def read_back(path: Path) -> list[tuple[str, str]]:
    """The file as `zkbroker run --broker-config-file` reads it (ISO-8859-1, Properties)."""
    return [(key, value) for key, value, _ in read_broker_config_file(str(path))]


# The minimal compose file of Confluent's examples.
CP = {
    "KAFKA_BROKER_ID": "1",
    "KAFKA_ZOOKEEPER_CONNECT": "zookeeper:2181",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka:29092,PLAINTEXT_HOST://localhost:9092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
}
BITNAMI = {"KAFKA_CFG_ZOOKEEPER_CONNECT": "zookeeper:2181"}


def props(translation: ic.KafkaTranslation | ic.ZooKeeperTranslation) -> dict[str, str]:
    return dict(translation.properties)


def confluent(**extra: str) -> ic.KafkaTranslation:
    return kafka_config({**CP, **extra}, "confluent-kafka", R39)


def bitnami(env: dict[str, str], release: tuple[int, ...] = R39) -> ic.KafkaTranslation:
    return kafka_config({**BITNAMI, **env}, "bitnami-kafka", release)


# --- detect ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "role"),
    [
        ({"KAFKA_CFG_ZOOKEEPER_CONNECT": "zk:2181", "KAFKA_BROKER_ID": "1"}, "bitnami-kafka"),
        ({"KAFKA_CFG_NUM_PARTITIONS": "3", "ZOOKEEPER_CLIENT_PORT": "2181"}, "bitnami-kafka"),
        ({"KAFKA_ZOOKEEPER_CONNECT": "zk:2181"}, "confluent-kafka"),
        ({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://h:9092"}, "confluent-kafka"),
        ({"KAFKA_BROKER_ID": "1", "ALLOW_ANONYMOUS_LOGIN": "yes"}, "confluent-kafka"),
        ({"KAFKA_LISTENERS": "PLAINTEXT://:9092"}, "confluent-kafka"),
        ({"ZOOKEEPER_CLIENT_PORT": "2181", "ZOO_SERVERS": "a"}, "confluent-zookeeper"),
        ({"ZOOKEEPER_SECURE_CLIENT_PORT": "2182"}, "confluent-zookeeper"),
        ({"ALLOW_ANONYMOUS_LOGIN": "yes"}, "bitnami-zookeeper"),
        ({"ZOO_TICK_TIME": "2000"}, "bitnami-zookeeper"),
        ({"ZKBROKER_BROKERS": "3", "KAFKA_NUM_PARTITIONS": "3", "ZOOKEEPER_TICK": "1"}, None),
        ({}, None),
    ],
)
def test_detect_rules_in_order(env: dict[str, str], role: str | None) -> None:
    assert detect(env) == role


def test_detect_ignores_the_cp_images_empty_defaults() -> None:
    empty = {"KAFKA_ZOOKEEPER_CONNECT": "", "KAFKA_ADVERTISED_LISTENERS": "", "CLUSTER_ID": ""}
    assert detect(empty) is None
    assert detect({**empty, "KAFKA_CFG_X": "", "ZOOKEEPER_CLIENT_PORT": "2181"}) == (
        "confluent-zookeeper"
    )


# --- Confluent cp-kafka ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "prop"),
    [
        ("KAFKA_ZOOKEEPER_CONNECT", "zookeeper.connect"),
        ("KAFKA_LOG_RETENTION_MS", "log.retention.ms"),
        ("KAFKA_FOO__BAR", "foo_bar"),  # `__` -> `_`
        ("KAFKA_FOO___BAR", "foo-bar"),  # `___` -> `-`
        ("KAFKA_A_B__C___D", "a.b_c-d"),
        ("KAFKA_X____Y", "x-_y"),  # `___` first, then `__`
        (
            "KAFKA_LISTENER_NAME_SECURE_SCRAM-SHA-512_SASL_JAAS_CONFIG",
            "listener.name.secure.scram-sha-512.sasl.jaas.config",
        ),
    ],
)
def test_confluent_env_to_props_rule(variable: str, prop: str) -> None:
    assert confluent_property_name(variable) == prop


def test_confluent_compose_file() -> None:
    t = confluent()
    assert t.errors == [] and t.warnings == [] and t.run_args == []
    assert t.zookeeper_login is None
    assert t.properties == [
        ("broker.id", "1"),
        ("zookeeper.connect", "zookeeper:2181"),
        ("listeners", "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092"),
        ("advertised.listeners", "PLAINTEXT://kafka:29092,PLAINTEXT_HOST://localhost:9092"),
        ("log.dirs", "/var/lib/kafka/data"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"),
        ("offsets.topic.replication.factor", "1"),
    ]


def test_confluent_listeners_log_dirs_and_broker_id() -> None:
    given = props(confluent(KAFKA_LISTENERS="PLAINTEXT://0.0.0.0:29092", KAFKA_LOG_DIRS="/d"))
    assert given["listeners"] == "PLAINTEXT://0.0.0.0:29092"
    assert given["log.dirs"] == "/d"
    unset = {k: v for k, v in CP.items() if k != "KAFKA_BROKER_ID"}
    t = kafka_config({**unset, "KAFKA_LISTENERS": "", "KAFKA_LOG_DIRS": ""}, "confluent-kafka", R39)
    assert props(t)["broker.id"] == "1001" and t.warnings == []
    assert props(t)["listeners"].startswith("PLAINTEXT://0.0.0.0:29092,")
    assert props(t)["log.dirs"] == "/var/lib/kafka/data"


def test_derived_listeners_and_trailing_comma() -> None:
    # testcontainers-dotnet's list ends with a comma; cub replaces every host by 0.0.0.0.
    dotnet = "PLAINTEXT://127.0.0.1:32768,BROKER://172.17.0.3:9093,"
    t = confluent(KAFKA_ADVERTISED_LISTENERS=dotnet)
    assert (
        props(t)["advertised.listeners"] == "PLAINTEXT://127.0.0.1:32768,BROKER://172.17.0.3:9093"
    )
    assert props(t)["listeners"] == "PLAINTEXT://0.0.0.0:32768,BROKER://0.0.0.0:9093"
    assert clean_listeners(" A://h:1 ,, B://:2,") == "A://h:1,B://:2"
    assert bind_all("A://[::1]:9092,B://:9093") == "A://0.0.0.0:9092,B://0.0.0.0:9093"
    t = confluent(KAFKA_LISTENERS="PLAINTEXT://:1,", KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://h:1,")
    assert (props(t)["listeners"], props(t)["advertised.listeners"]) == (
        "PLAINTEXT://:1",
        "PLAINTEXT://h:1",
    )


def test_confluent_required_variables_worded_as_dub() -> None:
    # The cp image declares both empty; dub counts an empty value as absent.
    env = {"KAFKA_ZOOKEEPER_CONNECT": "", "KAFKA_ADVERTISED_LISTENERS": ""}
    t = kafka_config(env, "confluent-kafka", R39)
    assert t.errors == [
        "KAFKA_ZOOKEEPER_CONNECT is required.",
        "KAFKA_ADVERTISED_LISTENERS is required.",
    ]
    assert confluent(KAFKA_ADVERTISED_LISTENERS=",").errors == [
        "KAFKA_ADVERTISED_LISTENERS is required."
    ]


def test_confluent_kraft_and_deprecated_variables_are_refused() -> None:
    t = kafka_config({"KAFKA_PROCESS_ROLES": "broker,controller"}, "confluent-kafka", R39)
    assert len(t.errors) == 1  # KRaft needs no ZooKeeper: only the ZooKeeper-only error
    assert "KAFKA_PROCESS_ROLES" in t.errors[0] and "ZooKeeper-mode" in t.errors[0]
    assert "process.roles" not in props(t)
    t = confluent(KAFKA_PORT="9092", KAFKA_HOST="h", KAFKA_ADVERTISED_PORT="1")
    assert t.errors == [
        "advertised.port is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.",
        "host is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.",
        "port is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead.",
    ]
    t = confluent(KAFKA_ADVERTISED_HOST="h", KAFKA_PROCESS_ROLES="")
    assert t.errors == [
        "advertised.host is deprecated. Please use KAFKA_ADVERTISED_LISTENERS instead."
    ]


def test_confluent_sasl_listener_needs_kafka_opts() -> None:
    sasl = "SASL_PLAINTEXT://h:9092"
    assert confluent(KAFKA_ADVERTISED_LISTENERS=sasl).errors == ["KAFKA_OPTS is required."]
    t = confluent(
        KAFKA_ADVERTISED_LISTENERS=sasl,
        KAFKA_OPTS="-Djava.security.auth.login.config=/etc/kafka/jaas.conf",
    )
    assert t.errors == [] and t.warnings == []
    assert t.run_args == ["--jaas-config", "/etc/kafka/jaas.conf"]


def test_confluent_exclusion_list_gives_no_property() -> None:
    excluded = {variable: "x" for variable in ic.CONFLUENT_EXCLUDED}
    t = confluent(**excluded)
    assert props(t)["zookeeper.clientCnxnSocket"] == "x"  # the template's other_props
    written = set(props(t)) - set(props(confluent()))
    assert written == {"zookeeper.clientCnxnSocket"}
    warned = {w.split(":", 1)[0] for w in t.warnings}
    assert warned == set(excluded) - {"KAFKA_ZOOKEEPER_CLIENT_CNXN_SOCKET"}
    assert len(t.warnings) == len(warned)  # one each
    assert "KAFKA_HEAP_OPTS: zkbroker has no JVM; ignored" in t.warnings
    assert any(w.startswith("KAFKA_LOG4J_LOGGERS: zkbroker has no log4j") for w in t.warnings)
    assert any(w.startswith("KAFKA_VERSION: ") and "3.9" in w for w in t.warnings)


def test_confluent_quirk_free_heap_opts() -> None:
    # cp 7.x's template writes heap.opts= (a missing comma); this image warns instead.
    t = confluent(KAFKA_HEAP_OPTS="-Xmx1G", KAFKA_LOG4J_OPTS="-Dlog4j=x")
    assert "heap.opts" not in props(t) and "log4j.opts" not in props(t)
    assert len(t.warnings) == 2


def test_confluent_image_variables_warned_once_each() -> None:
    t = confluent(
        KAFKA_JMX_PORT="9101",
        KAFKA_JMX_HOSTNAME="h",
        KAFKA_DATA_DIRS="/d",
        KAFKA_SSL_KEYSTORE_FILENAME="k.jks",
        KAFKA_SSL_KEY_CREDENTIALS="cred",
        KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE="false",
        KAFKA_CUB_ZK_TIMEOUT="60",  # honoured by the image's `ensure` (zk-ready): no word
        CONFLUENT_SUPPORT_CUSTOMER_ID="anonymous",
        PATH="/usr/bin",
    )
    assert props(t) == props(confluent())
    assert t.warnings[0] == (
        "CONFLUENT_SUPPORT_CUSTOMER_ID: confluent.support.customer.id is not a broker config "
        "of Kafka 3.9; ignored"
    )
    jmx = [w for w in t.warnings if w.startswith("KAFKA_JMX_PORT:")]
    assert jmx == [
        "KAFKA_JMX_PORT: jmx.port is not a broker config of Kafka 3.9; ignored "
        "(zkbroker has no JVM, so no JMX)"
    ]
    warned = [w.split(":", 1)[0] for w in t.warnings]
    assert sorted(warned) == sorted(
        [
            "CONFLUENT_SUPPORT_CUSTOMER_ID",
            "KAFKA_JMX_PORT",
            "KAFKA_JMX_HOSTNAME",
            "KAFKA_DATA_DIRS",
            "KAFKA_SSL_KEYSTORE_FILENAME",
            "KAFKA_SSL_KEY_CREDENTIALS",
            "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE",
        ]
    )


def test_confluent_unknown_key_for_the_release() -> None:
    env = {**CP, "KAFKA_ZOOKEEPER_SSL_CLIENT_ENABLE": "false", "KAFKA_NO_SUCH_THING": "1"}
    t = kafka_config(env, "confluent-kafka", (2, 0))
    assert "zookeeper.ssl.client.enable" not in props(t)
    assert t.warnings == [
        "KAFKA_NO_SUCH_THING: no.such.thing is not a broker config of Kafka 2.0; ignored",
        "KAFKA_ZOOKEEPER_SSL_CLIENT_ENABLE: zookeeper.ssl.client.enable is not a broker config "
        "of Kafka 2.0; ignored",
    ]
    t = kafka_config(env, "confluent-kafka", R39)
    assert props(t)["zookeeper.ssl.client.enable"] == "false"
    assert [w.split(":")[0] for w in t.warnings] == ["KAFKA_NO_SUCH_THING"]


def test_no_kafka_variable_is_ignored_silently() -> None:
    env = {
        **CP,
        "KAFKA_NUM_PARTITIONS": "3",
        "KAFKA_OPTS": "-Xmx1g -Djava.security.auth.login.config=/j.conf",
        "KAFKA_GC_LOG_OPTS": "x",
        "KAFKA_WHATEVER": "1",
        "KAFKA_LOG_RETENTION_HOURS": "1",
    }
    t = kafka_config(env, "confluent-kafka", R39)
    warned = {w.split(":", 1)[0] for w in t.warnings}
    for variable in env:
        assert confluent_property_name(variable) in props(t) or variable in warned, variable
    assert t.run_args == ["--jaas-config", "/j.conf"]
    assert any(w.startswith("KAFKA_OPTS: zkbroker has no JVM: its options") for w in t.warnings)


def test_kafka_opts_without_jaas_is_a_warning() -> None:
    t = confluent(KAFKA_OPTS="-Dfoo=bar")
    assert t.run_args == []
    assert [w.split(":")[0] for w in t.warnings] == ["KAFKA_OPTS"]


# --- Bitnami bitnami/kafka ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "prop"),
    [
        ("KAFKA_CFG_ZOOKEEPER_CONNECT", "zookeeper.connect"),
        ("KAFKA_CFG_LOG_RETENTION_HOURS", "log.retention.hours"),
        ("KAFKA_CFG_A__B", "a..b"),  # no escapes
        (
            "KAFKA_CFG_LISTENER_NAME_SASL_SSL_SCRAM-SHA-256_SASL_JAAS_CONFIG",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
        ),
        (
            "KAFKA_CFG_LISTENER_NAME_SASL_PLAINTEXT_PLAIN_SASL_JAAS_CONFIG",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        ("KAFKA_CFG_ZOOKEEPER_CLIENTCNXNSOCKET", "zookeeper.clientCnxnSocket"),
    ],
)
def test_bitnami_property_rule_and_its_exceptions(variable: str, prop: str) -> None:
    assert bitnami_property_name(variable) == prop


def test_bitnami_compose_file_and_defaults() -> None:
    t = bitnami({"ALLOW_PLAINTEXT_LISTENER": "yes", "BITNAMI_DEBUG": "true"})
    assert (t.errors, t.warnings, t.run_args, t.zookeeper_login) == ([], [], [], None)
    assert t.properties == [
        ("broker.id", "1001"),
        ("zookeeper.connect", "zookeeper:2181"),
        ("listeners", "PLAINTEXT://:9092"),
        ("log.dirs", "/bitnami/kafka/data"),
    ]


def test_bitnami_readme_two_listener_example() -> None:
    t = bitnami(
        {
            "KAFKA_BROKER_ID": "1",
            "KAFKA_CFG_LISTENER_SECURITY_PROTOCOL_MAP": "CLIENT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "KAFKA_CFG_LISTENERS": "CLIENT://:9092,EXTERNAL://:9093,",
            "KAFKA_CFG_ADVERTISED_LISTENERS": "CLIENT://kafka:9092,EXTERNAL://localhost:9093",
            "KAFKA_CFG_INTER_BROKER_LISTENER_NAME": "CLIENT",
            "KAFKA_CFG_LOG_DIRS": "/data",
        }
    )
    assert t.errors == [] and t.warnings == []
    assert props(t) == {
        "broker.id": "1",
        "zookeeper.connect": "zookeeper:2181",
        "listeners": "CLIENT://:9092,EXTERNAL://:9093",
        "advertised.listeners": "CLIENT://kafka:9092,EXTERNAL://localhost:9093",
        "log.dirs": "/data",
        "inter.broker.listener.name": "CLIENT",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,EXTERNAL:PLAINTEXT",
    }


def test_bitnami_aliases_and_renames() -> None:
    env = {
        "KAFKA_CFG_NUM_PARTITIONS": "2",  # the CFG form marks the convention
        "KAFKA_ZOOKEEPER_CONNECT": "zk:2181",
        "KAFKA_LISTENERS": "PLAINTEXT://:9093",
        "KAFKA_LOGS_DIRS": "/logs",
        "KAFKA_MAX_MESSAGE_BYTES": "2048",
        "KAFKA_SEGMENT_BYTES": "4096",
        "KAFKA_ZOOKEEPER_CONNECT_TIMEOUT_MS": "5000",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
        "KAFKA_DEFAULT_REPLICATION_FACTOR": "1",
    }
    t = kafka_config(env, "bitnami-kafka", R39)
    assert t.errors == [] and t.warnings == []
    assert props(t) == {
        "broker.id": "1001",
        "zookeeper.connect": "zk:2181",
        "listeners": "PLAINTEXT://:9093",
        "log.dirs": "/logs",
        "auto.create.topics.enable": "false",
        "default.replication.factor": "1",
        "log.segment.bytes": "4096",
        "message.max.bytes": "2048",
        "num.partitions": "2",
        "zookeeper.connection.timeout.ms": "5000",
    }


def test_bitnami_alias_wins_over_the_cfg_form() -> None:
    # kafka_declare_alias_env exports a set KAFKA_<S> over KAFKA_CFG_<S>.
    t = bitnami({"KAFKA_CFG_BROKER_ID": "5", "KAFKA_BROKER_ID": "7"})
    assert props(t)["broker.id"] == "7"
    assert t.warnings == [
        "KAFKA_CFG_BROKER_ID: KAFKA_BROKER_ID is set too and wins, as in Bitnami's; ignored"
    ]


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"KAFKA_CFG_PROCESS_ROLES": "broker"}, "KAFKA_CFG_PROCESS_ROLES"),
        ({"KAFKA_PROCESS_ROLES": "broker,controller"}, "KAFKA_PROCESS_ROLES"),
        ({"KAFKA_ENABLE_KRAFT": "yes"}, "KAFKA_ENABLE_KRAFT"),
        ({"KAFKA_ENABLE_KRAFT": "true"}, "KAFKA_ENABLE_KRAFT"),
    ],
)
def test_bitnami_kraft_is_refused(env: dict[str, str], variable: str) -> None:
    t = bitnami(env)
    assert len(t.errors) == 1
    assert t.errors[0].startswith(variable) and "ZooKeeper-mode Kafka brokers only" in t.errors[0]
    assert "process.roles" not in props(t)


def test_bitnami_needs_zookeeper_mode() -> None:
    t = kafka_config({"KAFKA_CFG_NUM_PARTITIONS": "1"}, "bitnami-kafka", R39)
    assert len(t.errors) == 1 and "neither ZooKeeper mode" in t.errors[0]
    assert "KAFKA_CFG_ZOOKEEPER_CONNECT" in t.errors[0]
    assert kafka_config({"KAFKA_CFG_ZOOKEEPER_CONNECT": ""}, "bitnami-kafka", R39).errors


def test_bitnami_switches_accepted_silently() -> None:
    for kraft in ("no", "false"):
        env = {"KAFKA_ENABLE_KRAFT": kraft, "ALLOW_PLAINTEXT_LISTENER": "yes"}
        t = bitnami({**env, "BITNAMI_DEBUG": "yes", "KAFKA_HEAP_OPTS": "-Xmx1g"})
        assert (t.errors, t.warnings) == ([], [])


def test_bitnami_zookeeper_protocols() -> None:
    assert bitnami({"KAFKA_ZOOKEEPER_PROTOCOL": "PLAINTEXT"}).errors == []
    sasl = {"KAFKA_ZOOKEEPER_PROTOCOL": "SASL", "KAFKA_ZOOKEEPER_USER": "kafka"}
    t = bitnami({**sasl, "KAFKA_ZOOKEEPER_PASSWORD": "s3cr=t"})
    assert (t.errors, t.warnings) == ([], [])
    assert t.zookeeper_login == ("kafka", "s3cr=t")
    assert t.run_args == ["--zookeeper-digest", "kafka:s3cr=t", "--zookeeper-auth", "sasl"]
    run = build_parser("run").parse_args(["run", *t.run_args])  # what `zkbroker run` takes
    assert (run.zookeeper_digest, run.zookeeper_auth) == ("kafka:s3cr=t", "sasl")
    missing = bitnami(sasl)
    assert len(missing.errors) == 1 and "KAFKA_ZOOKEEPER_USER/PASSWORD" in missing.errors[0]
    assert missing.run_args == [] and missing.zookeeper_login is None
    for tls in ("SSL", "SASL_SSL"):
        (error,) = bitnami({**sasl, "KAFKA_ZOOKEEPER_PROTOCOL": tls}).errors
        assert "not supported" in error and tls in error
    (error,) = bitnami({"KAFKA_ZOOKEEPER_PROTOCOL": "KERBEROS"}).errors
    assert "PLAINTEXT, SASL, SSL, SASL_SSL" in error
    t = bitnami({"KAFKA_ZOOKEEPER_USER": "u", "KAFKA_ZOOKEEPER_PASSWORD": "p"})
    assert [w.split(":")[0] for w in t.warnings] == [
        "KAFKA_ZOOKEEPER_USER",
        "KAFKA_ZOOKEEPER_PASSWORD",
    ]
    assert t.run_args == []


def test_bitnami_other_variables_are_warned_of() -> None:
    t = bitnami(
        {
            "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",  # not an alias: Bitnami ignores it
            "KAFKA_CLIENT_USERS": "user",
            "KAFKA_JMX_OPTS": "-x",
            "KAFKA_OPTS": "-Djava.security.auth.login.config=/opt/jaas.conf",
            "KAFKA_CFG_NO_SUCH_KEY": "1",
            "KAFKA_NONSENSE": "1",
        }
    )
    assert t.run_args == ["--jaas-config", "/opt/jaas.conf"]
    assert "offsets.topic.num.partitions" not in props(t)
    assert t.warnings == [
        "KAFKA_CFG_NO_SUCH_KEY: no.such.key is not a broker config of Kafka 3.9; ignored",
        "KAFKA_CLIENT_USERS: Bitnami's generated SASL/TLS set-up is not emulated (set "
        "KAFKA_CFG_* and a JAAS file in KAFKA_OPTS); ignored",
        "KAFKA_JMX_OPTS: zkbroker has no JVM, so no JMX; ignored",
        "KAFKA_NONSENSE: not a Bitnami variable; ignored",
        "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: not a Bitnami variable (the Bitnami image reads "
        "KAFKA_CFG_OFFSETS_TOPIC_NUM_PARTITIONS); ignored",
    ]


def test_bitnami_unknown_key_for_the_release() -> None:
    t = bitnami({"KAFKA_CFG_ZOOKEEPER_CLIENTCNXNSOCKET": "x"}, (2, 0))
    assert t.warnings == [
        "KAFKA_CFG_ZOOKEEPER_CLIENTCNXNSOCKET: zookeeper.clientCnxnSocket is not a broker "
        "config of Kafka 2.0; ignored"
    ]
    assert "zookeeper.clientCnxnSocket" in props(
        bitnami({"KAFKA_CFG_ZOOKEEPER_CLIENTCNXNSOCKET": "x"})
    )


def test_translations_are_what_zkbroker_run_takes(tmp_path: Path) -> None:
    from zkbroker.broker.cli.main import settings_from_args

    env = {**CP, "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://h:9092,BROKER://b:9093,"}
    env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] = "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT"
    for translation in (confluent(**env), bitnami({"KAFKA_BROKER_ID": "2"})):
        path = tmp_path / "server.properties"
        path.write_text(render_properties(translation.properties))
        args = build_parser("run").parse_args(["run", "--broker-config-file", str(path)])
        settings = settings_from_args(args)
        assert settings.broker_ids == (int(props(translation)["broker.id"]),)
        assert settings.zookeeper == props(translation)["zookeeper.connect"]
        assert settings.log_dir == props(translation)["log.dirs"]


def test_kafka_config_refuses_a_zookeeper_role() -> None:
    with pytest.raises(ValueError, match="not a Kafka role"):
        kafka_config(CP, "confluent-zookeeper", R39)
    with pytest.raises(ValueError, match="not a ZooKeeper role"):
        zookeeper_config({}, "bitnami-kafka")


# --- ZooKeeper ------------------------------------------------------------------------------


def test_cp_zookeeper_table() -> None:
    given = {
        "ZOOKEEPER_CLIENT_PORT": "2181",
        "ZOOKEEPER_TICK_TIME": "2000",
        "ZOOKEEPER_INIT_LIMIT": "7",
        "ZOOKEEPER_SYNC_LIMIT": "3",
        "ZOOKEEPER_MAX_CLIENT_CNXNS": "0",
        "ZOOKEEPER_AUTOPURGE_PURGE_INTERVAL": "1",
        "ZOOKEEPER_AUTOPURGE_SNAP_RETAIN_COUNT": "3",
        "ZOOKEEPER_ADMIN_ENABLE_SERVER": "true",
        "ZOOKEEPER_JUTE_MAX_BUFFER": "4194304",
        "ZOOKEEPER_4LW_COMMANDS_WHITELIST": "mntr,conf",
        "ZOOKEEPER_GLOBAL_OUTSTANDING_LIMIT": "1000",
        "ZOOKEEPER_PRE_ALLOC_SIZE": "65536",
        "ZOOKEEPER_SNAP_COUNT": "100000",
        "ZOOKEEPER_ELECTION_ALG": "3",
        "ZOOKEEPER_MAX_SESSION_TIMEOUT": "40000",
        "ZOOKEEPER_MIN_SESSION_TIMEOUT": "4000",
    }
    t = zookeeper_config(given, "confluent-zookeeper")
    assert (t.errors, t.warnings, t.myid, t.data_dir) == ([], [], None, "/var/lib/zookeeper/data")
    assert t.properties == [
        ("dataDir", "/var/lib/zookeeper/data"),
        ("dataLogDir", "/var/lib/zookeeper/log"),
        ("clientPort", "2181"),
        ("tickTime", "2000"),
        ("globalOutstandingLimit", "1000"),
        ("preAllocSize", "65536"),
        ("snapCount", "100000"),
        ("maxClientCnxns", "0"),
        ("minSessionTimeout", "4000"),
        ("maxSessionTimeout", "40000"),
        ("autopurge.snapRetainCount", "3"),
        ("autopurge.purgeInterval", "1"),
        ("electionAlg", "3"),
        ("initLimit", "7"),
        ("syncLimit", "3"),
        ("jute.maxbuffer", "4194304"),
        ("admin.enableServer", "true"),
        ("4lw.commands.whitelist", "mntr, conf, ruok, srvr"),
    ]


def test_cp_zookeeper_ensemble() -> None:
    servers = "zookeeper-1:2888:3888;zookeeper-2:32888:33888;zookeeper-3:42888:43888"
    env = {"ZOOKEEPER_CLIENT_PORT": "2181", "ZOOKEEPER_SERVERS": servers}
    assert zookeeper_config(env, "confluent-zookeeper").errors == [
        "ZOOKEEPER_SERVER_ID is required."
    ]
    t = zookeeper_config({**env, "ZOOKEEPER_SERVER_ID": "2"}, "confluent-zookeeper")
    assert t.errors == [] and t.myid == 2
    assert props(t)["server.1"] == "zookeeper-1:2888:3888"
    assert props(t)["server.3"] == "zookeeper-3:42888:43888"
    assert (props(t)["initLimit"], props(t)["syncLimit"]) == ("10", "5")  # configure's defaults
    assert "server.4" not in props(t)
    solo = zookeeper_config(
        {"ZOOKEEPER_CLIENT_PORT": "1", "ZOOKEEPER_SERVER_ID": "3"}, "confluent-zookeeper"
    )
    assert solo.myid == 3 and "initLimit" not in props(solo)
    bad = zookeeper_config(
        {"ZOOKEEPER_CLIENT_PORT": "1", "ZOOKEEPER_SERVER_ID": "x"}, "confluent-zookeeper"
    )
    assert bad.errors == ["ZOOKEEPER_SERVER_ID must be a number, not 'x'"]


def test_cp_zookeeper_checks_and_warnings() -> None:
    t = zookeeper_config({"ZOOKEEPER_CLIENT_PORT": ""}, "confluent-zookeeper")
    assert t.errors == ["one of (ZOOKEEPER_CLIENT_PORT,ZOOKEEPER_SECURE_CLIENT_PORT) is required."]
    (error,) = zookeeper_config(
        {"ZOOKEEPER_SECURE_CLIENT_PORT": "2182"}, "confluent-zookeeper"
    ).errors
    assert error.startswith("ZOOKEEPER_SECURE_CLIENT_PORT:") and "TLS" in error
    env = {
        "ZOOKEEPER_CLIENT_PORT": "2181",
        "ZOOKEEPER_SSL_KEYSTORE_LOCATION": "/k",
        "ZOOKEEPER_LOG4J_ROOT_LOGLEVEL": "WARN",
        "ZOOKEEPER_MADE_UP": "1",
        "ZOOKEEPER_4LW_COMMANDS_WHITELIST": "*",
    }
    t = zookeeper_config(env, "confluent-zookeeper")
    assert t.warnings == [
        "ZOOKEEPER_LOG4J_ROOT_LOGLEVEL: this image does not configure ZooKeeper's log4j; ignored",
        "ZOOKEEPER_MADE_UP: not in cp-zookeeper's table of settings; ignored",
        "ZOOKEEPER_SSL_KEYSTORE_LOCATION: TLS and SASL are not supported by this image's "
        "ZooKeeper; ignored",
    ]
    assert props(t)["4lw.commands.whitelist"] == "*"
    assert props(t)["admin.enableServer"] == "false"


def test_bitnami_zookeeper_defaults() -> None:
    t = zookeeper_config({"ALLOW_ANONYMOUS_LOGIN": "yes"}, "bitnami-zookeeper")
    assert (t.errors, t.warnings, t.myid) == ([], [], 1)
    assert t.data_dir == "/bitnami/zookeeper/data"
    assert t.properties == [
        ("dataDir", "/bitnami/zookeeper/data"),
        ("clientPort", "2181"),
        ("tickTime", "2000"),
        ("initLimit", "10"),
        ("syncLimit", "5"),
        ("maxClientCnxns", "60"),
        ("4lw.commands.whitelist", "srvr, mntr, ruok"),
        ("maxSessionTimeout", "40000"),
        ("admin.enableServer", "false"),
    ]


def test_bitnami_zookeeper_variables() -> None:
    env = {
        "ALLOW_ANONYMOUS_LOGIN": "yes",
        "ZOO_PORT_NUMBER": "2182",
        "ZOO_TICK_TIME": "1000",
        "ZOO_INIT_LIMIT": "20",
        "ZOO_SYNC_LIMIT": "",  # Bitnami's ${VAR:-default}
        "ZOO_MAX_CLIENT_CNXNS": "0",
        "ZOO_MAX_SESSION_TIMEOUT": "60000",
        "ZOO_4LW_COMMANDS_WHITELIST": "mntr",
        "ZOO_ENABLE_ADMIN_SERVER": "yes",
        "ZOO_SERVER_ID": "2",
        "ZOO_DATA_DIR": "/z",
        "ZOO_CFG_maxCnxns": "10",
        "ZOO_CFG_SNAP_COUNT": "5",
        "ZOO_HEAP_SIZE": "512",
    }
    t = zookeeper_config(env, "bitnami-zookeeper")
    assert t.errors == [] and (t.myid, t.data_dir) == (2, "/z")
    assert props(t) == {
        "dataDir": "/z",
        "clientPort": "2182",
        "tickTime": "1000",
        "initLimit": "20",
        "syncLimit": "5",
        "maxClientCnxns": "0",
        "4lw.commands.whitelist": "mntr, ruok, srvr",
        "maxSessionTimeout": "60000",
        "admin.enableServer": "true",
        "maxCnxns": "10",
        "SNAP.COUNT": "5",  # every `_` -> `.`, case kept
    }
    assert t.warnings == ["ZOO_HEAP_SIZE: not a setting this image takes from Bitnami's; ignored"]


def test_bitnami_zookeeper_servers() -> None:
    base = {"ALLOW_ANONYMOUS_LOGIN": "yes"}
    for servers in (
        "z1:2888:3888,z2:2888:3888;z3:2888:3888",
        "z1:2888:3888 z2:2888:3888 z3:2888:3888",
    ):
        t = zookeeper_config({**base, "ZOO_SERVERS": servers}, "bitnami-zookeeper")
        assert [(k, v) for k, v in t.properties if k.startswith("server.")] == [
            ("server.1", "z1:2888:3888;2181"),
            ("server.2", "z2:2888:3888;2181"),
            ("server.3", "z3:2888:3888;2181"),
        ]
    ids = "z1:2888:3888::4,z2:2888:3888:observer::7"
    t = zookeeper_config(
        {**base, "ZOO_SERVERS": ids, "ZOO_PORT_NUMBER": "2200"}, "bitnami-zookeeper"
    )
    assert props(t)["server.4"] == "z1:2888:3888;2200"
    assert props(t)["server.7"] == "z2:2888:3888:observer;2200"
    solo = zookeeper_config({**base, "ZOO_SERVERS": "z1:2888:3888"}, "bitnami-zookeeper")
    assert not any(k.startswith("server.") for k in props(solo))  # standalone
    (error,) = zookeeper_config(
        {**base, "ZOO_SERVERS": "z1:2888,z2:1:2"}, "bitnami-zookeeper"
    ).errors
    assert "'z1:2888'" in error


def test_bitnami_zookeeper_refusals() -> None:
    (error,) = zookeeper_config({"ZOO_TICK_TIME": "2000"}, "bitnami-zookeeper").errors
    assert "ALLOW_ANONYMOUS_LOGIN=yes" in error
    assert zookeeper_config({"ALLOW_ANONYMOUS_LOGIN": "no"}, "bitnami-zookeeper").errors
    auth = {"ALLOW_ANONYMOUS_LOGIN": "yes", "ZOO_ENABLE_AUTH": "yes"}
    (error,) = zookeeper_config(auth, "bitnami-zookeeper").errors
    assert error.startswith("ZOO_ENABLE_AUTH=yes:") and "not supported" in error
    tls = {"ALLOW_ANONYMOUS_LOGIN": "yes", "ZOO_TLS_CLIENT_ENABLE": "true"}
    assert zookeeper_config(tls, "bitnami-zookeeper").errors


# --- Java properties ------------------------------------------------------------------------


def test_render_properties_escapes() -> None:
    assert render_properties([("a", "b")]) == "a=b\n"
    assert render_properties([("k", "C:\\dir=x")]) == "k=C\\:\\\\dir\\=x\n"
    assert render_properties([("k", "  two leading")]) == "k=\\  two leading\n"
    assert render_properties([("a key", "a value")]) == "a\\ key=a value\n"
    assert render_properties([("#k", "!v\tw\n")]) == "\\#k=\\!v\\tw\\n\n"
    assert render_properties([("k", "é€")]) == "k=\\u00E9\\u20AC\n"
    assert render_properties([("k", "\U0001f600")]) == "k=\\uD83D\\uDE00\n"  # UTF-16 units
    assert render_properties([("k", "")]) == "k=\n"


def test_render_properties_round_trip(tmp_path: Path) -> None:
    pairs = [
        ("listener.name.x.sasl.jaas.config", 'org.Module required user_a="p=w:d";'),
        ("path", "C:\\kafka\\data"),
        ("blank", "  leading and trailing  "),
        ("key with spaces", "value: x = y"),
        ("#not.a.comment", "!neither"),
        ("unicode", "é☃€"),
        ("controls", "a\tb\nc\rd\fe\x01"),
        ("empty", ""),
        ("trailing.backslash", "x\\"),
    ]
    text = render_properties(pairs)
    assert text.isascii()
    path = tmp_path / "round-trip.properties"
    path.write_bytes(text.encode("ascii"))
    assert read_back(path) == pairs


# --- zk-ready -------------------------------------------------------------------------------


def test_zookeeper_hosts() -> None:
    assert zookeeper_hosts("zk1:2181,zk2:2182/kafka") == [("zk1", 2181), ("zk2", 2182)]
    assert zookeeper_hosts("zk") == [("zk", 2181)]
    assert zookeeper_hosts("[::1]:2190,[fe80::1]") == [("::1", 2190), ("fe80::1", 2181)]
    for bad in ("", "/chroot", "zk:port", "zk:0", ":2181"):
        with pytest.raises(ValueError, match="not a ZooKeeper connect string"):
            zookeeper_hosts(bad)


@pytest.fixture
def server() -> Iterator[Callable[[Callable[[socket.socket], None]], int]]:
    """Start a local TCP server whose connections `handle` serves; its port."""
    listeners: list[socket.socket] = []
    held: list[socket.socket] = []

    def start(handle: Callable[[socket.socket], None]) -> int:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def serve() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                held.append(conn)
                handle(conn)

        threading.Thread(target=serve, daemon=True).start()
        return int(listener.getsockname()[1])

    yield start
    for sock in listeners + held:
        sock.close()


def _answer(text: bytes) -> Callable[[socket.socket], None]:
    """A ZooKeeper that reads the four-letter word, answers `text` and closes."""

    def handle(conn: socket.socket) -> None:
        conn.recv(4)
        conn.sendall(text)
        conn.close()

    return handle


_imok = _answer(b"imok")


def _silent(conn: socket.socket) -> None:
    """Accept and never answer (the connection is held until the test ends)."""


def test_zk_ready_on_imok(server: Callable[..., int], capsys: pytest.CaptureFixture[str]) -> None:
    port = server(_imok)
    assert zookeeper_ready(f"127.0.0.1:{port}", 5.0)
    assert main(["zk-ready", f"localhost:1,127.0.0.1:{port}/kafka", "5"], env={}) == 0
    assert capsys.readouterr() == ("", "")


def test_zk_ready_when_four_letter_words_are_off(server: Callable[..., int]) -> None:
    notice = b"ruok is not executed because it is not in the whitelist.\n"
    assert zookeeper_ready(f"127.0.0.1:{server(_answer(notice))}", 5.0)
    assert zookeeper_ready(f"127.0.0.1:{server(_answer(b''))}", 5.0)
    assert zookeeper_ready(f"127.0.0.1:{server(lambda conn: conn.close())}", 5.0)
    assert not zookeeper_ready(f"127.0.0.1:{server(_answer(b'nope'))}", 0.3)


def test_zk_ready_times_out(server: Callable[..., int], capsys: pytest.CaptureFixture[str]) -> None:
    port = server(_silent)
    assert main(["zk-ready", f"127.0.0.1:{port}", "0.3"], env={}) == 1
    assert capsys.readouterr().err == (
        f"zkbroker: error: ZooKeeper at 127.0.0.1:{port} did not answer within 0.3 s\n"
    )
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        refused = free.getsockname()[1]
    assert not zookeeper_ready(f"127.0.0.1:{refused}", 0.3)
    assert main(["zk-ready", "bad:port", "1"], env={}) == 1
    assert "not a ZooKeeper connect string" in capsys.readouterr().err
    assert main(["zk-ready", "zk:2181", "0"], env={}) == 2


# --- the command ----------------------------------------------------------------------------


def test_main_detect(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["detect"], env=BITNAMI) == 0
    assert capsys.readouterr().out == "bitnami-kafka\n"
    assert main(["detect"], env={"PATH": "/bin"}) == 0
    assert capsys.readouterr().out == "\n"


def test_main_kafka(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kafka.properties"
    env = {**CP, "KAFKA_HEAP_OPTS": "-Xmx1g", "KAFKA_OPTS": "-Djava.security.auth.login.config=/j"}
    assert main(["kafka", "--out", str(out)], env=env) == 0
    captured = capsys.readouterr()
    assert captured.out == "--jaas-config\n/j\n"
    assert captured.err == "zkbroker: warning: KAFKA_HEAP_OPTS: zkbroker has no JVM; ignored\n"
    text = out.read_text()
    assert text.startswith("# zkbroker: from the confluent-kafka environment, Kafka 3.9\n")
    assert read_back(out) == confluent().properties


def test_main_kafka_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "kafka.properties")
    env = {**BITNAMI, "KAFKA_CFG_ZOOKEEPER_CLIENTCNXNSOCKET": "x", "ZKBROKER_KAFKA_VERSION": "2.0"}
    assert main(["kafka", "--out", out], env=env) == 0
    assert "not a broker config of Kafka 2.0" in capsys.readouterr().err
    assert main(["kafka", "--out", out, "--release", "3.9.1"], env=env) == 0
    assert capsys.readouterr().err == ""
    assert "zookeeper.clientCnxnSocket=x\n" in Path(out).read_text()
    assert main(["kafka", "--out", out, "--release", "4.0"], env=env) == 2
    assert "unknown Kafka release '4.0'" in capsys.readouterr().err


def test_main_kafka_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kafka.properties"
    env = {"KAFKA_ZOOKEEPER_CONNECT": "", "KAFKA_ADVERTISED_LISTENERS": "", "KAFKA_JMX_OPTS": "x"}
    assert main(["kafka", "--out", str(out)], env=env) == 1
    assert capsys.readouterr() == (
        "",
        "zkbroker: warning: KAFKA_JMX_OPTS: zkbroker has no JVM, so no JMX; ignored\n"
        "zkbroker: error: KAFKA_ZOOKEEPER_CONNECT is required.\n"
        "zkbroker: error: KAFKA_ADVERTISED_LISTENERS is required.\n",
    )
    assert not out.exists()
    assert main(["kafka", "--out", str(tmp_path)], env=CP) == 1  # a directory: not writable
    assert capsys.readouterr().err.startswith(f"zkbroker: error: cannot write {tmp_path}")


def test_main_zookeeper(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "zoo.cfg"
    data = tmp_path / "data"
    env = {"ALLOW_ANONYMOUS_LOGIN": "yes", "ZOO_SERVER_ID": "3", "ZOO_DATA_DIR": str(data)}
    assert main(["zookeeper", "--out", str(out)], env={**env, "ZOO_LOG_LEVEL": "WARN"}) == 0
    assert capsys.readouterr() == (
        "",
        "zkbroker: warning: ZOO_LOG_LEVEL: not a setting this image takes from Bitnami's; "
        "ignored\n",
    )
    assert (data / "myid").read_text() == "3\n"
    entries = dict(read_back(out))
    assert entries["dataDir"] == str(data) and entries["clientPort"] == "2181"
    assert main(["zookeeper", "--out", str(tmp_path / "refused.cfg")], env={"ZOO_X": "1"}) == 1
    assert "ALLOW_ANONYMOUS_LOGIN=yes" in capsys.readouterr().err
    assert not (tmp_path / "refused.cfg").exists()


def test_main_zookeeper_cp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "zookeeper.properties"
    assert main(["zookeeper", "--out", str(out)], env={"ZOOKEEPER_CLIENT_PORT": "2181"}) == 0
    assert capsys.readouterr() == ("", "")
    assert "clientPort=2181\n" in out.read_text()  # and no myid: no ZOOKEEPER_SERVER_ID
    data = tmp_path / "zk-data"
    monkeypatch.setattr(ic, "CONFLUENT_ZK_DATA_DIR", str(data))
    env = {"ZOOKEEPER_CLIENT_PORT": "2181", "ZOOKEEPER_SERVER_ID": "2"}
    assert main(["zookeeper", "--out", str(out)], env=env) == 0
    assert (data / "myid").read_text() == "2\n"
    assert f"dataDir={data}\n" in out.read_text()
    # No convention at all: cp-zookeeper's own check refuses.
    assert main(["zookeeper", "--out", str(out)], env={}) == 1
    assert "one of (ZOOKEEPER_CLIENT_PORT" in capsys.readouterr().err


def test_python_dash_m(tmp_path: Path) -> None:
    env = {"KAFKA_CFG_ZOOKEEPER_CONNECT": "zk:2181", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "zkbroker.broker.cli.image_conventions", "detect"],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "bitnami-kafka\n"), done.stderr
