"""Kafka's Kerberos short names (`sasl.kerberos.principal.to.local.rules`): the rule grammar of
each release, the mapping, its errors, and properties over generated names and rules."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zkbroker.broker.rules.kerberos_names import (
    BadFormatString,
    KerberosName,
    KerberosShortNamer,
    NoMatchingRule,
    config_rules,
    java_regex,
    java_replacement,
    parse_rule,
    replace_parameters,
)

REALM = "REALM.COM"


def short(rules: list[str], name: str, release: tuple[int, ...] = (3, 9)) -> str:
    return KerberosShortNamer.parse(REALM, rules, release).short_name(KerberosName.parse(name))


def test_names_parse_into_service_host_realm() -> None:
    assert KerberosName.parse("App.service-name/example.com@REALM.COM") == KerberosName(
        "App.service-name", "example.com", REALM
    )
    assert KerberosName.parse("alice@REALM.COM") == KerberosName("alice", None, REALM)
    assert KerberosName.parse("alice") == KerberosName("alice")
    assert KerberosName.parse("alice@") == KerberosName("alice", None, "")
    assert str(KerberosName.parse("a/b@R")) == "a/b@R"
    with pytest.raises(ValueError, match="Malformed Kerberos name: a/b/c@R"):
        KerberosName.parse("a/b/c@R")
    with pytest.raises(ValueError, match="Malformed Kerberos name"):
        KerberosName.parse("a@b@c")


def test_substitution_rules_and_default() -> None:
    rules = [
        r"RULE:[1:$1](App\..*)s/App\.(.*)/$1/g",
        r"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g",
        "DEFAULT",
    ]
    assert short(rules, "App.service-name/example.com@REALM.COM") == "service-name"
    assert short(rules, "App.service-name@REALM.COM") == "service-name"
    assert short(rules, "user/host@REALM.COM") == "user"
    # A simple name (no realm) is kept without any rule.
    assert short([], "bob") == "bob"


def test_lower_and_upper_case() -> None:
    lower = [
        "RULE:[1:$1]/L",
        "RULE:[2:$1](Test.*)s/ABC///L",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L",
        r"RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L",
        "RULE:[2:$1]/L",
        "DEFAULT",
    ]
    assert short(lower, "User@REALM.COM") == "user"
    assert short(lower, "TestABC/host@FOO.COM") == "test"
    assert short(lower, "ABC_User_ABC/host@FOO.COM") == "xyz_user_xyz"
    assert short(lower, "App.SERVICE-name/example.com@REALM.COM") == "service-name"
    assert short(lower, "User/root@REALM.COM") == "user"
    upper = [r.replace("/L", "/U") for r in lower]
    assert short(upper, "User@REALM.COM") == "USER"
    assert short(upper, "ABC_User_ABC/host@FOO.COM") == "XYZ_USER_XYZ"
    assert short(upper, "App.SERVICE-name/example.com@REALM.COM") == "SERVICE-NAME"


@pytest.mark.parametrize(
    "rule",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/g",
        "rule:[1:$1]",
        "rule:[1:$1]/L/U",
        "RULE:[1:$1]/L/U",
        "RULE:[1:$1]/LU",
        "RULE:[1:$1/L",
        "RULE:[1:$1]/l",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/L/g",
        "RULE:[:$1]",
    ],
)
def test_invalid_rules_are_refused(rule: str) -> None:
    with pytest.raises(ValueError, match="Invalid rule"):
        KerberosShortNamer.parse(REALM, [rule])


def test_case_suffixes_follow_the_release() -> None:
    # /L came with 1.1, /U with 2.4; before, the suffix is an unmatched substring.
    with pytest.raises(ValueError, match="unmatched substring: `/L`"):
        parse_rule("RULE:[1:$1]/L", (1, 0))
    assert parse_rule("RULE:[1:$1]/L", (1, 1)).lower
    with pytest.raises(ValueError, match="unmatched substring: `U`"):
        parse_rule("RULE:[1:$1]/U", (2, 3))
    assert parse_rule("RULE:[1:$1]/U", (2, 4)).upper
    assert short(["RULE:[1:$1]s/x/y/"], "xax@R", (0, 10, 0)) == "yax"


def test_rules_print_as_kafka_prints_them() -> None:
    for text in (
        "DEFAULT",
        "RULE:[1:$1@$0](.*@FOO)s/@.*///L",
        "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/U",
        "RULE:[1:$1]",
    ):
        assert str(parse_rule(text)) == text
    # The optional slash before the case letter is always printed.
    assert str(parse_rule("RULE:[1:$1]L")) == "RULE:[1:$1]/L"
    assert str(parse_rule("RULE:[1:$1](.*)s/@.*//L")) == "RULE:[1:$1](.*)s/@.*///L"


def test_no_matching_rule_and_non_simple_results() -> None:
    with pytest.raises(NoMatchingRule) as e:
        short(["DEFAULT"], "alice@OTHER.COM")
    assert str(e.value) == "No rules apply to alice@OTHER.COM, rules [DEFAULT]"
    with pytest.raises(NoMatchingRule) as e:
        short(["RULE:[1:$1@$0]"], "alice@REALM.COM")
    assert str(e.value) == "Non-simple name alice@REALM.COM after auth_to_local rule RULE:[1:$1@$0]"
    with pytest.raises(NoMatchingRule):
        short([], "alice@REALM.COM")
    # A rule for another number of components does not apply.
    assert short(["RULE:[2:$1]", "RULE:[1:x$1]"], "alice@R") == "xalice"


def test_cross_realm_mapping() -> None:
    rules = ["RULE:[1:$1@$0](.*@PARTNER\\.ORG)s/@.*//L", "DEFAULT"]
    assert short(rules, "Carol@PARTNER.ORG") == "carol"
    assert short(rules, "alice@REALM.COM") == "alice"
    with pytest.raises(NoMatchingRule):
        short(rules, "mallory@EVIL.ORG")


def test_replace_parameters() -> None:
    assert replace_parameters("", []) == ""
    assert replace_parameters("hello", ["a", "b"]) == "hello"
    assert replace_parameters("hello $0", ["too", "many"]) == "hello too"
    assert replace_parameters("hello $0", ["no recursion $1"]) == "hello no recursion $1"
    assert replace_parameters("$1.$2@$0", ["R", "a", "b"]) == "a.b@R"
    with pytest.raises(BadFormatString, match="outside of the valid range"):
        replace_parameters("$0", [])
    with pytest.raises(BadFormatString, match="bad format"):
        replace_parameters("hello $a", ["x"])


def test_java_replacement_and_regex() -> None:
    pattern = java_regex(r"(?<user>[a-z]+)\.(\d)")
    assert pattern.sub(java_replacement("${user}-$2", pattern), "bob.7") == "bob-7"
    # $12 names group 1 then a literal 2 when there is no group 12 (Java's reading).
    assert pattern.sub(java_replacement("$12", pattern), "bob.7") == "bob2"
    assert pattern.sub(java_replacement(r"\$1", pattern), "bob.7") == "$1"
    with pytest.raises(ValueError, match="No group 3"):
        pattern.sub(java_replacement("$3", pattern), "bob.7")
    with pytest.raises(ValueError, match="Illegal group reference"):
        pattern.sub(java_replacement("$x", pattern), "bob.7")
    assert java_regex(r"\Qa.b\E").fullmatch("a.b") and not java_regex(r"\Qa.b\E").match("axb")
    with pytest.raises(ValueError, match="regex"):
        parse_rule("RULE:[1:$1](a[)")


def test_config_value_is_a_kafka_list() -> None:
    assert config_rules("RULE:[1:$1]/L , DEFAULT") == ["RULE:[1:$1]/L", "DEFAULT"]
    assert config_rules("  ") == []
    assert KerberosShortNamer.parse(REALM, None).rules == (parse_rule("DEFAULT"),)


_COMPONENT = st.text(st.characters(blacklist_characters="/@", codec="utf-8"), min_size=1)
_SIMPLE = st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,15}", fullmatch=True)


@given(_SIMPLE, st.one_of(st.none(), _SIMPLE))
def test_default_gives_the_first_component_in_the_default_realm(
    service: str, host: str | None
) -> None:
    name = KerberosName(service, host, REALM)
    assert KerberosName.parse(str(name)) == name
    assert short(["DEFAULT"], str(name)) == service
    with pytest.raises(NoMatchingRule):
        short(["DEFAULT"], str(KerberosName(service, host, "ELSEWHERE")))


@given(_SIMPLE, st.sampled_from(["L", "U", ""]))
def test_case_rules_change_only_case(user: str, case: str) -> None:
    rule = f"RULE:[1:$1]/{case}" if case else "RULE:[1:$1]"
    got = short([rule], f"{user}@ANY.REALM")
    assert got.lower() == user.lower()
    assert got == {"L": user.lower(), "U": user.upper(), "": user}[case]


@given(st.lists(_COMPONENT, min_size=1, max_size=2), _COMPONENT)
def test_results_are_simple_or_refused(components: list[str], realm: str) -> None:
    name = KerberosName(components[0], components[1] if len(components) > 1 else None, realm)
    rules = ["RULE:[1:$1]", "RULE:[2:$1_$2]", "DEFAULT"]
    try:
        got = short(rules, str(name))
    except NoMatchingRule:
        return
    assert not re.search(r"[/@]", got)


_RULE_TEXT = st.builds(
    lambda n, fmt, match, sed, case: f"RULE:[{n}:{fmt}]{match}{sed}{case}",
    st.integers(1, 2),
    st.sampled_from(["$1", "$1@$0", "$2", "x$1"]),
    st.sampled_from(["", "(.*)", r"(a\..*)"]),
    st.sampled_from(["", "s/a/b/", "s/a/b/g", r"s/(.)/$1$1/"]),
    st.sampled_from(["", "/L", "/U"]),
)


@given(st.lists(st.one_of(st.just("DEFAULT"), _RULE_TEXT), max_size=4))
def test_generated_rules_parse_and_print_back(rules: list[str]) -> None:
    namer = KerberosShortNamer.parse(REALM, rules)
    assert [str(r) for r in namer.rules] == rules
    # Kafka's LIST config round trip: the printed rules read back the same.
    assert config_rules(", ".join(rules)) == (rules or [])
