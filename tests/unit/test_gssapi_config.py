"""A GSSAPI listener's configuration as Kafka's broker reads it: the Krb5LoginModule login, the
service name, the short-name rules, and the refusals at start (no KDC needed here; the exchange
itself runs against a real KDC in tests/integration/test_security_gssapi.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zkbroker.broker.security.gssapi_server import kerberos_login
from zkbroker.broker.security.jaas import parse_jaas_file
from zkbroker.broker.security.listener_config import listener_security

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"


def _jaas(**options: str) -> str:
    text = " ".join(f'{k}="{v}"' for k, v in options.items())
    return f"{KRB5} required {text};"


def _configs(jaas: str, **extra: str) -> dict[str, str]:
    return {
        "sasl.enabled.mechanisms": "GSSAPI",
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": jaas,
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


GOOD = {"useKeyTab": "true", "storeKey": "true", "principal": "kafka/h@R"}


def test_login_options() -> None:
    login = kerberos_login({**GOOD, "keyTab": "/k"}, "kafka", "here")
    assert (login.principal, login.keytab, login.store_key, login.service_name) == (
        "kafka/h@R",
        "/k",
        True,
        "kafka",
    )
    assert login.service == "kafka"
    # Krb5LoginModule's booleans are case-insensitive "true".
    assert kerberos_login({**GOOD, "storeKey": "TRUE"}, "kafka", "here").store_key
    assert not kerberos_login({**GOOD, "storeKey": "yes"}, "kafka", "here").store_key
    assert kerberos_login({**GOOD, "serviceName": "kafka"}, None, "here").service_name == "kafka"


@pytest.mark.parametrize(
    ("options", "service", "reason"),
    [
        (GOOD, None, "No serviceName defined in either JAAS or Kafka config"),
        (
            {**GOOD, "serviceName": "a"},
            "b",
            "Conflicting serviceName values found in JAAS and Kafka configs value in JAAS file "
            "a, value in Kafka config b",
        ),
        ({**GOOD, "useKeyTab": "false"}, "kafka", "useKeyTab=true"),
        ({"useKeyTab": "true"}, "kafka", "Unable to obtain Principal Name"),
        ({**GOOD, "principal": "a/b/c@R"}, "kafka", "Principal has name with unexpected format"),
    ],
)
def test_login_refusals(options: dict[str, str], service: str | None, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        kerberos_login(options, service, "here")


@pytest.mark.parametrize(
    ("configs", "release", "reason"),
    [
        ({"sasl.enabled.mechanisms": "GSSAPI"}, (3, 9), "gssapi.sasl.jaas.config"),
        (
            _configs("org.apache.kafka.common.security.plain.PlainLoginModule required;"),
            (3, 9),
            "GSSAPI needs a com.sun.security.auth.module.Krb5LoginModule entry",
        ),
        (_configs(_jaas(**GOOD)), (3, 9), "No serviceName defined"),
        (
            _configs(
                _jaas(**GOOD, serviceName="kafka"),
                sasl_kerberos_principal_to_local_rules="RULE:[1:$1]/U",
            ),
            (2, 3),
            "unmatched substring",
        ),
        (
            _configs(
                _jaas(**GOOD, keyTab="/nonexistent/kafka.keytab"),
                sasl_kerberos_service_name="kafka",
            ),
            (3, 9),
            "Unable to obtain password from user",
        ),
        # Before 1.1 no broker config carries a JAAS login: only the JAAS file does.
        (_configs(_jaas(**GOOD), sasl_kerberos_service_name="kafka"), (1, 0), "KafkaServer"),
    ],
)
def test_listener_refusals(configs: dict[str, str], release: tuple[int, ...], reason: str) -> None:
    pytest.importorskip("gssapi")
    with pytest.raises(ValueError, match=reason):
        listener_security(configs, "SASL_PLAINTEXT", release)


def test_jaas_file_section_is_the_login(tmp_path: Path) -> None:
    pytest.importorskip("gssapi")
    keytab = tmp_path / "missing.keytab"
    login = _jaas(**GOOD, keyTab=str(keytab))
    configs = {"sasl.enabled.mechanisms": "GSSAPI", "sasl.kerberos.service.name": "kafka"}
    # The section is found and read: the keytab it names is what fails. The listener's own
    # section counts from 1.1 only.
    listener_section = parse_jaas_file(f"sasl_plaintext.KafkaServer {{ {login} }};", "j.conf")
    with pytest.raises(ValueError, match=f"keytab {keytab} does not exist"):
        listener_security(configs, "SASL_PLAINTEXT", (3, 9), listener_section)
    with pytest.raises(ValueError, match=r"Could not find a 'KafkaServer' entry"):
        listener_security(configs, "SASL_PLAINTEXT", (1, 0), listener_section)
    plain_section = parse_jaas_file(f"KafkaServer {{ {login} }};", "j.conf")
    with pytest.raises(ValueError, match=f"keytab {keytab} does not exist"):
        listener_security(configs, "SASL_PLAINTEXT", (1, 0), plain_section)
