"""Kafka's topic-config catalog: every topic config of every emulated release, as data.

What is here (pure code, no I/O, no ZooKeeper, no clock):

* `ConfigKey` records, one per config *variant*: a key whose type, default or validator changed
  between releases has one record per release range (`since` inclusive, `until` exclusive).
  `topic_config_keys(release)` picks the records of one release, ordered by name.
* Kafka's ConfigDef value rules (`parse_value`, `render_value`): Java trimming, Java integer and
  double syntax, case-insensitive booleans, comma-split lists, Java's `Double.toString`.
* Validators as small callable objects that raise `InvalidConfig` with ConfigException's words
  ("Invalid value X for configuration Y: ..."): `Range` (atLeast/between), `ValidString`,
  `ValidList`, the throttled-replica list rule, the message-format-version rule (ApiVersion up to
  3.2, MetadataVersion from 3.3) and the gzip level rule (3.8+).
* `validate_topic_configs`: `LogConfig.validate` as CreateTopics and AlterConfigs run it in ZK
  mode: unknown names first (in the caller's order), then every value parsed in Kafka's definition
  order (hash order for 0.10.x, whose ConfigDef used a HashMap), then the min/max compaction-lag
  rule (2.3+), then the 3.6+ tiered-storage rules of a broker without tiered storage
  (`remote.log.storage.system.enable=false`, Kafka's default).
* `describe_topic_config`: the entries DescribeConfigs (and CreateTopics v5+) reports for a topic:
  all public keys plus every override in the znode (unknown keys too), values rendered as Kafka
  renders them, and the synonyms list Kafka builds (`ConfigHelper.createTopicConfigEntry`). The
  broker's part -- the value of a key the topic does not override and the broker synonyms, with
  Kafka's `dropWhile` quirk -- comes from the broker (`BrokerLogDefaults`, implemented by
  `zkbroker.broker.rules.broker_config.BrokerConfig` over the broker catalog).

Where the numbers come from (apache/kafka at each release tag): `core/src/main/scala/kafka/log/
LogConfig.scala` (0.10.0-3.4), `storage/src/main/java/org/apache/kafka/storage/internals/log/
LogConfig.java` (3.5-3.9, 3.9 = `3.9.0-rc3`), `KafkaConfig.scala` `Defaults` and the 3.x
`ServerLogConfigs`/`RemoteLogManagerConfig` constants, `ConfigDef.java`, `ConfigException.java`,
`ApiVersion.scala` / `MetadataVersion.java` and their validators, `ThrottledReplicaListValidator`,
`GzipCompression.java`/`CompressionType.java`, `ServerTopicConfigSynonyms.java`,
`DynamicBrokerConfig.brokerConfigSynonyms`, `ConfigHelper.scala`/`AdminManager.scala`,
`ZkAdminManager.scala`, `AdminZkClient.scala`. Kafka's documentation strings are not copied:
`ConfigEntry.documentation` is always None.

Deliberately not here:
* Broker configs: `zkbroker.broker.rules.broker_config_catalog` (keys) and
  `zkbroker.broker.rules.broker_config` (the layered values a broker runs with).
* Null config values (the CreateTopics/AlterConfigs handlers reject them with their own words);
  a None value passed here is treated as absent.
* Which error code an API answers: `validate_topic_configs` raises INVALID_CONFIG (40), as
  CreateTopics 2.1+ does; `InvalidConfig.for_create_topics` and
  `zkbroker.handlers.support.config_alter.config_failure` give the code and message other
  APIs/releases use.
* Tiered storage enabled on the broker is only a flag (`remote_storage_system_enabled`); ZK-mode
  3.9 checks against the topic's *existing* configs are not needed because Kafka passes none.

Known approximations: 0.10.x definition order assumes Java 8's HashMap; several unknown names in
one request are reported in the caller's order (Kafka iterates a `Properties` hash table);
DOUBLE values are rendered with the shortest round-trip digits (JDK 19+ `Double.toString`; JDK 17
prints the same for every value in [0, 1] tried, but extra digits for some huge/tiny ones); before
1.1 DescribeConfigs had no synonyms on the wire, so the synonyms computed here simply go unsent.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from functools import cache
from types import MappingProxyType
from typing import Protocol

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.jvm_collections import java_hashmap_order
from zkbroker.zk_layout.release import Release, normalize_release

ConfigValue = bool | int | float | str | list[str]
Validator = Callable[[str, ConfigValue], None]


class ConfigType(IntEnum):
    """DescribeConfigs `config_type` ids (DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs `config_source` ids (DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


@dataclass(frozen=True)
class ConfigKey:
    """One config as one range of releases defines it.

    `default` is the value a broker with default settings *reports* (DescribeConfigs' string),
    or None. `since`/`until` bound the releases this record applies to (`until` exclusive, None =
    still current); a key whose definition changed has several records, and it first existed at
    the smallest `since` of its records (`key_since`). `broker_synonyms` is the broker key the
    topic key maps to followed by that key's own synonyms, in Kafka's order. `internal` marks a
    key that is defined (so it may be set) but hidden from DescribeConfigs unless overridden.
    """

    name: str
    type: ConfigType
    default: str | None
    validator: Validator | None = None
    broker_synonyms: tuple[str, ...] = ()
    since: Release = (0, 10, 0)
    until: Release | None = None
    sensitive: bool = False
    internal: bool = False

    def applies_to(self, release: Release) -> bool:
        r = normalize_release(release)
        if r < normalize_release(self.since):
            return False
        return self.until is None or r < normalize_release(self.until)


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    is_sensitive: bool
    read_only: bool
    config_type: ConfigType
    synonyms: tuple[ConfigSynonym, ...]
    documentation: str | None = None


class InvalidConfig(Exception):
    """A topic config Kafka refuses, with Kafka's message.

    `config_exception` is True when Kafka raised a ConfigException (a value that does not parse
    or fails its validator, or a tiered-storage rule), False for InvalidConfigurationException
    (unknown name, compaction-lag conflict, ZK-mode remote.log.* rule). APIs map the two
    differently; see `for_create_topics` and
    `zkbroker.handlers.support.config_alter.config_failure`.
    """

    def __init__(
        self,
        message: str,
        error_code: int = error_codes.INVALID_CONFIG,
        *,
        config_exception: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.config_exception = config_exception

    def __repr__(self) -> str:
        return f"InvalidConfig({self.error_code}, {self.message!r})"

    def for_create_topics(self, release: Release) -> InvalidConfig:
        """The error CreateTopics answers: 40, except that before 2.1 a ConfigException was not
        converted and came back as UNKNOWN_SERVER_ERROR (-1) (its message was still sent in
        0.11-2.0, when ApiError.fromThrowable did not yet blank messages of -1)."""
        if self.config_exception and normalize_release(release) < (2, 1):
            return InvalidConfig(
                self.message, error_codes.UNKNOWN_SERVER_ERROR, config_exception=True
            )
        return InvalidConfig(
            self.message, error_codes.INVALID_CONFIG, config_exception=self.config_exception
        )


# --------------------------------------------------------------------------------------------
# Java value rules (ConfigDef.parseType / convertToString and the JDK parsers they call)

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
_LONG_MAX_TEXT = str(LONG_MAX)

_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim(): every char <= U+0020
_JAVA_INTEGER = re.compile(r"[+-]?\d+")  # Character.digit accepts any Unicode Nd digit
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")  # Java regex \s*,\s*


def java_trim(text: str) -> str:
    return text.strip(_JAVA_TRIM)


def _java_char_upper(c: str) -> str:
    u = c.upper()
    return u if len(u) == 1 else c


def _java_char_lower(c: str) -> str:
    u = c.lower()
    return u if len(u) == 1 else c


def java_equals_ignore_case(a: str, b: str) -> bool:
    """String.equalsIgnoreCase: per char, equal, or equal upper-cased, or equal lower(upper)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        ux, uy = _java_char_upper(x), _java_char_upper(y)
        if ux != uy and _java_char_lower(ux) != _java_char_lower(uy):
            return False
    return True


def java_double_str(value: float) -> str:
    """Double.toString: plain decimal for 1e-3 <= |x| < 1e7, else d.dddE<exp>."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    parts = Decimal(repr(magnitude)).as_tuple()
    digits = "".join(str(d) for d in parts.digits)
    exponent = int(parts.exponent)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped or "0"
    sci = len(digits) - 1 + exponent  # value = d.ddd x 10^sci
    if 1e-3 <= magnitude < 1e7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            fraction = digits[sci + 1 :] or "0"
            return f"{sign}{whole}.{fraction}"
        return f"{sign}0.{'0' * (-sci - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def java_value_str(value: object) -> str:
    """How Java's string concatenation prints a parsed config value (messages, List.toString)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(java_value_str(v) for v in value) + "]"
    return str(value)


def config_error(name: str, shown_value: str, message: str | None) -> InvalidConfig:
    """ConfigException(name, value, message)."""
    suffix = "" if message is None else f": {message}"
    return InvalidConfig(
        f"Invalid value {shown_value} for configuration {name}{suffix}", config_exception=True
    )


def _parse_integer(name: str, text: str, type_: ConfigType, low: int, high: int) -> int:
    trimmed = java_trim(text)
    if _JAVA_INTEGER.fullmatch(trimmed):
        number = int(trimmed)
        if low <= number <= high:
            return number
    raise config_error(name, text, f"Not a number of type {type_.name}")


def _parse_double(name: str, text: str) -> float:
    trimmed = java_trim(text)
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise config_error(name, text, "Not a number of type DOUBLE")
    sign, body = ("", trimmed) if trimmed[0] not in "+-" else (trimmed[0], trimmed[1:])
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        return -math.inf if sign == "-" else math.inf
    if body[-1] in "fFdD":  # Java's type suffix; the value is parsed as a double regardless
        body = body[:-1]
    if body[:2] in ("0x", "0X"):
        return float.fromhex(sign + body)
    return float(sign + body)


def parse_value(key: ConfigKey, text: str) -> ConfigValue:
    """ConfigDef.parseType for a string value: the type conversion only, no validator.

    Raises InvalidConfig (a ConfigException) when the text does not parse; the message shows
    the value as given, untrimmed, as Kafka's does.
    """
    trimmed = java_trim(text)
    match key.type:
        case ConfigType.BOOLEAN:
            if java_equals_ignore_case(trimmed, "true"):
                return True
            if java_equals_ignore_case(trimmed, "false"):
                return False
            raise config_error(key.name, text, "Expected value to be either true or false")
        case ConfigType.STRING | ConfigType.PASSWORD | ConfigType.CLASS:
            return trimmed
        case ConfigType.INT:
            return _parse_integer(key.name, text, key.type, INT_MIN, INT_MAX)
        case ConfigType.SHORT:
            return _parse_integer(key.name, text, key.type, SHORT_MIN, SHORT_MAX)
        case ConfigType.LONG:
            return _parse_integer(key.name, text, key.type, LONG_MIN, LONG_MAX)
        case ConfigType.DOUBLE:
            return _parse_double(key.name, text)
        case ConfigType.LIST:
            return [] if not trimmed else _LIST_SEPARATOR.split(trimmed)
    raise ValueError(f"config {key.name} has no parsable type ({key.type.name})")


def render_value(key: ConfigKey, value: ConfigValue) -> str:
    """ConfigDef.convertToString: the string DescribeConfigs shows for a parsed value."""
    if key.type is ConfigType.LIST:
        if not isinstance(value, list):
            raise TypeError(f"{key.name} is a LIST, got {value!r}")
        return ",".join(value)
    if key.type is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if key.type is ConfigType.DOUBLE:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{key.name} is a DOUBLE, got {value!r}")
        return java_double_str(float(value))
    return java_value_str(value)


def validate_value(key: ConfigKey, text: str) -> ConfigValue:
    """ConfigDef.parseValue: parse, then run the key's validator. Returns the parsed value."""
    value = parse_value(key, text)
    if key.validator is not None:
        key.validator(key.name, value)
    return value


# --------------------------------------------------------------------------------------------
# Validators (ConfigDef.Range / ValidString / ValidList and Kafka's own validator classes)


@dataclass(frozen=True)
class Range:
    """ConfigDef.Range: atLeast(min) or between(min, max), bounds inclusive; a fractional
    bound prints as given."""

    min: float
    max: float | None = None

    def __call__(self, name: str, value: ConfigValue) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name}: a number was expected, got {value!r}")
        # Kafka compares doubleValue()s; NaN passes both tests.
        if value < self.min:
            raise config_error(name, java_value_str(value), f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise config_error(
                name, java_value_str(value), f"Value must be no more than {self.max}"
            )

    def __str__(self) -> str:
        return f"[{self.min},...]" if self.max is None else f"[{self.min},...,{self.max}]"


def at_least(minimum: int) -> Range:
    return Range(minimum)


def between(minimum: float, maximum: float) -> Range:
    return Range(minimum, maximum)


@dataclass(frozen=True)
class ValidString:
    """ConfigDef.ValidString: the (trimmed, case-sensitive) value must be one of `options`."""

    options: tuple[str, ...]

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value not in self.options:
            raise config_error(
                name, java_value_str(value), "String must be one of: " + ", ".join(self.options)
            )

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


@dataclass(frozen=True)
class ValidList:
    """ConfigDef.ValidList: every list element must be one of `options`; the message shows the
    first bad element, not the whole list."""

    options: tuple[str, ...]

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, list):
            raise TypeError(f"{name}: a list was expected, got {value!r}")
        for element in value:
            ValidString(self.options)(name, element)

    def __str__(self) -> str:
        return "[" + ", ".join(self.options) + "]"


_THROTTLED_ENTRY = re.compile(r"(?:[0-9]+:[0-9]+)?")


@dataclass(frozen=True)
class ThrottledReplicaList:
    """ThrottledReplicaListValidator: `*` or `partition:broker` entries (empty entries pass).

    Up to 2.7 a list whose first entry is `*` passes whatever follows; from 2.8 the entries
    concatenated must be exactly `*`. The message printed the list with Java's List.toString and
    was reworded in 1.0 and 2.3 (the 0.10.1-0.11 one has two spaces after the name).
    """

    wildcard_by_join: bool
    message_style: int  # 0: 0.10.1-0.11, 1: 1.0-2.2, 2: 2.3+

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, list):
            raise TypeError(f"{name}: a list was expected, got {value!r}")
        entries = [java_trim(v) for v in value]
        if all(_THROTTLED_ENTRY.fullmatch(e) for e in entries):
            return
        if self.wildcard_by_join:
            if "".join(entries) == "*":
                return
        elif entries and entries[0] == "*":
            return
        raise config_error(name, java_value_str(value), self._message(name))

    def _message(self, name: str) -> str:
        if self.message_style == 0:
            return (
                f"{name}  must match for format "
                "[partitionId],[brokerId]:[partitionId],[brokerId]:[partitionId],[brokerId] etc"
            )
        layout = (
            "[partitionId],[brokerId]:[partitionId],[brokerId]:..."
            if self.message_style == 1
            else "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
        return (
            f"{name} must be the literal '*' or a list of replicas in the following format: "
            + layout
        )

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


@dataclass(frozen=True)
class GzipLevel:
    """The gzip level rule (3.8+): 1..9, or -1 (Deflater.DEFAULT_COMPRESSION)."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name}: an int was expected, got {value!r}")
        if value > 9 or (value < 1 and value != -1):
            raise config_error(
                name, java_value_str(value), "Value must be between 1 and 9 or equal to -1"
            )

    def __str__(self) -> str:
        return "[1,...,9] or -1"


# --------------------------------------------------------------------------------------------
# message.format.version: the inter-broker protocol versions each release knows

# IBP release string -> number of internal versions (IV0, IV1, ...); "0.8.0".."0.9.0" have none.
_IBP_LINES: tuple[tuple[str, int], ...] = (
    ("0.8.0", 0), ("0.8.1", 0), ("0.8.2", 0), ("0.9.0", 0),
    ("0.10.0", 2), ("0.10.1", 3), ("0.10.2", 1), ("0.11.0", 3),
    ("1.0", 1), ("1.1", 1), ("2.0", 2), ("2.1", 3), ("2.2", 2), ("2.3", 2), ("2.4", 2),
    ("2.5", 1), ("2.6", 1), ("2.7", 3), ("2.8", 2),
    ("3.0", 2), ("3.1", 1), ("3.2", 1), ("3.3", 4), ("3.4", 1), ("3.5", 3), ("3.6", 3),
    ("3.7", 5), ("3.8", 1), ("3.9", 1), ("4.0", 2),
)  # fmt: skip
# MetadataVersion listed these before their release shipped (not production, so their short
# form "3.8" is not accepted there): 3.8-IV0 in 3.7, 3.9-IV0 in 3.8, 4.0-IV0/IV1 in 3.9.
_IBP_LISTED_EARLY: Mapping[str, Release] = MappingProxyType(
    {"3.8": (3, 7), "3.9": (3, 8), "4.0": (3, 9)}
)


@dataclass(frozen=True)
class _Ibp:
    version: str  # "2.8-IV1", or "0.9.0" for the legacy ones
    line: Release  # the release the version belongs to
    listed_since: Release  # first release whose broker accepts it


def _ibp_versions() -> tuple[_Ibp, ...]:
    out: list[_Ibp] = []
    for line_text, count in _IBP_LINES:
        line = normalize_release(tuple(int(p) for p in line_text.split(".")))
        listed = normalize_release(_IBP_LISTED_EARLY.get(line_text, line))
        if count == 0:
            out.append(_Ibp(line_text, line, listed))
        out.extend(_Ibp(f"{line_text}-IV{i}", line, listed) for i in range(count))
    return tuple(out)


_IBPS = _ibp_versions()


def _short_version(version: str) -> str:
    return version.split("-", 1)[0]


def message_format_version_default(release: Release) -> str:
    """The `message.format.version` a default broker reports: its own latest IBP before 3.0,
    then always "3.0-IV1" (IBP >= 3.0 ignores the setting and reports 3.0-IV1)."""
    r = normalize_release(release)
    if r >= (3,):
        return "3.0-IV1"
    known = [v for v in _IBPS if v.listed_since <= r]
    return known[-1].version if known else _IBPS[0].version


def _split_dots(text: str) -> list[str]:
    """Java's String.split("\\\\."): trailing empty strings are dropped."""
    parts = text.split(".")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and text:
        return []
    return parts


@dataclass(frozen=True)
class InterBrokerVersion:
    """ApiVersionValidator (2.1-3.2) / MetadataVersionValidator (3.3+) of one release."""

    release: Release

    def _accepted(self) -> tuple[frozenset[str], frozenset[str]]:
        return _accepted_versions(normalize_release(self.release))

    def __call__(self, name: str, value: ConfigValue) -> None:
        text = java_value_str(value)
        r = normalize_release(self.release)
        segments = _split_dots(text)
        count = 3 if text.startswith("0.") else 2
        if r >= (3, 3):
            key = text if count >= len(segments) else ".".join(segments[:count])
            message = f"Version {text} is not a valid version"
        else:
            key = ".".join(segments[:count])
            message = f"Version `{text}` is not a valid version"
        full, short = self._accepted()
        if key not in full and key not in short:
            raise config_error(name, text, message)

    def __str__(self) -> str:
        full, _ = self._accepted()
        ordered = [v.version for v in _IBPS if v.version in full]
        return "[" + ", ".join(ordered) + "]"


@cache
def _accepted_versions(release: Release) -> tuple[frozenset[str], frozenset[str]]:
    listed = [v for v in _IBPS if v.listed_since <= release]
    full = frozenset(v.version for v in listed)
    if release >= (3, 7):  # only production versions map from their short form
        short = frozenset(_short_version(v.version) for v in listed if v.line <= release)
    else:
        short = frozenset(_short_version(v.version) for v in listed)
    return full, short


# --------------------------------------------------------------------------------------------
# The catalog

_COMPRESSION_BEFORE_2_1 = ("uncompressed", "snappy", "lz4", "gzip", "producer")
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

_THROTTLED_ERAS: tuple[tuple[Release, Release | None, ThrottledReplicaList], ...] = (
    ((0, 10, 1), (1, 0), ThrottledReplicaList(wildcard_by_join=False, message_style=0)),
    ((1, 0), (2, 3), ThrottledReplicaList(wildcard_by_join=False, message_style=1)),
    ((2, 3), (2, 8), ThrottledReplicaList(wildcard_by_join=False, message_style=2)),
    ((2, 8), None, ThrottledReplicaList(wildcard_by_join=True, message_style=2)),
)


def version_key_eras() -> list[tuple[Release, Release | None, InterBrokerVersion | None]]:
    """`(since, until, validator)` for each emulated release line (0.10.0-3.9), for the keys
    whose value is an inter-broker protocol version: the default follows the release, and
    from 2.1 the value must be a version that release knows."""
    lines = sorted({v.line for v in _IBPS if (0, 10) <= v.line <= (3, 9)})
    return [
        (
            line,
            lines[i + 1] if i + 1 < len(lines) else None,
            None if line < (2, 1) else InterBrokerVersion(line),
        )
        for i, line in enumerate(lines)
    ]


def _message_format_version_keys() -> list[ConfigKey]:
    return [
        ConfigKey(
            "message.format.version",
            ConfigType.STRING,
            message_format_version_default(since),
            validator,
            ("log.message.format.version",),
            since=since,
            until=until,
        )
        for since, until, validator in version_key_eras()
    ]


def _throttled_keys(name: str) -> list[ConfigKey]:
    return [
        ConfigKey(name, ConfigType.LIST, "", validator, since=since, until=until)
        for since, until, validator in _THROTTLED_ERAS
    ]


def _remote_keys(name: str, type_: ConfigType, default: str, validator: Validator | None,
                 synonyms: tuple[str, ...]) -> list[ConfigKey]:  # fmt: skip
    """Defined publicly in 3.0, internal (settable, hidden) in 3.1-3.5, public again in 3.6."""
    return [
        ConfigKey(name, type_, default, validator, since=(3, 0), until=(3, 1)),
        ConfigKey(name, type_, default, validator, since=(3, 1), until=(3, 6), internal=True),
        ConfigKey(name, type_, default, validator, synonyms, since=(3, 6)),
    ]


_L = ConfigType.LONG
_I = ConfigType.INT
_B = ConfigType.BOOLEAN
_S = ConfigType.STRING

# In Kafka's definition order (the order ConfigDef.parse reports the first bad value in).
TOPIC_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("segment.bytes", _I, "1073741824", at_least(14), ("log.segment.bytes",)),
    ConfigKey("segment.ms", _L, "604800000", at_least(0), ("log.roll.ms", "log.roll.hours"),
              until=(2, 0)),
    ConfigKey("segment.ms", _L, "604800000", at_least(1), ("log.roll.ms", "log.roll.hours"),
              since=(2, 0)),
    ConfigKey("segment.jitter.ms", _L, "0", at_least(0),
              ("log.roll.jitter.ms", "log.roll.jitter.hours")),
    ConfigKey("segment.index.bytes", _I, "10485760", at_least(0), ("log.index.size.max.bytes",),
              until=(3, 3)),
    ConfigKey("segment.index.bytes", _I, "10485760", at_least(4), ("log.index.size.max.bytes",),
              since=(3, 3)),
    ConfigKey("flush.messages", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.flush.interval.messages",), until=(3, 3)),
    ConfigKey("flush.messages", _L, _LONG_MAX_TEXT, at_least(1),
              ("log.flush.interval.messages",), since=(3, 3)),
    ConfigKey("flush.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")),
    ConfigKey("retention.bytes", _L, "-1", None, ("log.retention.bytes",)),
    ConfigKey("retention.ms", _L, "604800000", None,
              ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), until=(2, 2)),
    ConfigKey("retention.ms", _L, "604800000", at_least(-1),
              ("log.retention.ms", "log.retention.minutes", "log.retention.hours"), since=(2, 2)),
    ConfigKey("max.message.bytes", _I, "1000012", at_least(0), ("message.max.bytes",),
              until=(2, 5)),
    ConfigKey("max.message.bytes", _I, "1048588", at_least(0), ("message.max.bytes",),
              since=(2, 5)),
    ConfigKey("index.interval.bytes", _I, "4096", at_least(0), ("log.index.interval.bytes",)),
    ConfigKey("delete.retention.ms", _L, "86400000", at_least(0),
              ("log.cleaner.delete.retention.ms",)),
    ConfigKey("min.compaction.lag.ms", _L, "0", at_least(0),
              ("log.cleaner.min.compaction.lag.ms",), since=(0, 10, 1)),
    ConfigKey("max.compaction.lag.ms", _L, _LONG_MAX_TEXT, at_least(1),
              ("log.cleaner.max.compaction.lag.ms",), since=(2, 3)),
    ConfigKey("file.delete.delay.ms", _L, "60000", at_least(0), ("log.segment.delete.delay.ms",)),
    ConfigKey("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", between(0, 1),
              ("log.cleaner.min.cleanable.ratio",)),
    ConfigKey("cleanup.policy", _S, "delete", ValidString(("compact", "delete")),
              ("log.cleanup.policy",), until=(0, 10, 1)),
    ConfigKey("cleanup.policy", ConfigType.LIST, "delete", ValidList(("compact", "delete")),
              ("log.cleanup.policy",), since=(0, 10, 1)),
    ConfigKey("unclean.leader.election.enable", _B, "true", None,
              ("unclean.leader.election.enable",), until=(0, 11)),
    ConfigKey("unclean.leader.election.enable", _B, "false", None,
              ("unclean.leader.election.enable",), since=(0, 11)),
    ConfigKey("min.insync.replicas", _I, "1", at_least(1), ("min.insync.replicas",)),
    ConfigKey("compression.type", _S, "producer", ValidString(_COMPRESSION_BEFORE_2_1),
              ("compression.type",), until=(2, 1)),
    ConfigKey("compression.type", _S, "producer", ValidString(_COMPRESSION),
              ("compression.type",), since=(2, 1)),
    ConfigKey("compression.gzip.level", _I, "-1", GzipLevel(), ("compression.gzip.level",),
              since=(3, 8)),
    ConfigKey("compression.lz4.level", _I, "9", between(1, 17), ("compression.lz4.level",),
              since=(3, 8)),
    ConfigKey("compression.zstd.level", _I, "3", between(-131072, 22),
              ("compression.zstd.level",), since=(3, 8)),
    ConfigKey("preallocate", _B, "false", None, ("log.preallocate",)),
    *_message_format_version_keys(),
    ConfigKey("message.timestamp.type", _S, "CreateTime", None, ("log.message.timestamp.type",),
              until=(2, 0)),
    ConfigKey("message.timestamp.type", _S, "CreateTime",
              ValidString(("CreateTime", "LogAppendTime")), ("log.message.timestamp.type",),
              since=(2, 0)),
    ConfigKey("message.timestamp.difference.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.difference.max.ms",)),
    ConfigKey("message.timestamp.before.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.before.max.ms",), since=(3, 6)),
    ConfigKey("message.timestamp.after.max.ms", _L, _LONG_MAX_TEXT, at_least(0),
              ("log.message.timestamp.after.max.ms",), since=(3, 6)),
    *_throttled_keys("leader.replication.throttled.replicas"),
    *_throttled_keys("follower.replication.throttled.replicas"),
    ConfigKey("message.downconversion.enable", _B, "true", None,
              ("log.message.downconversion.enable",), since=(2, 0)),
    *_remote_keys("remote.storage.enable", _B, "false", None, ()),
    *_remote_keys("local.retention.ms", _L, "-2", at_least(-2), ("log.local.retention.ms",)),
    *_remote_keys("local.retention.bytes", _L, "-2", at_least(-2),
                  ("log.local.retention.bytes",)),
    ConfigKey("remote.log.copy.disable", _B, "false", None, since=(3, 9)),
    ConfigKey("remote.log.delete.on.disable", _B, "false", None, since=(3, 9)),
)  # fmt: skip


@cache
def _keys_in_definition_order(release: Release, include_internal: bool) -> tuple[ConfigKey, ...]:
    keys = [
        k
        for k in TOPIC_CONFIG_KEYS
        if k.applies_to(release) and (include_internal or not k.internal)
    ]
    if release < (0, 11):  # ConfigDef kept its keys in a HashMap before 0.11
        by_name = {k.name: k for k in keys}
        keys = [by_name[n] for n in java_hashmap_order(by_name)]
    return tuple(keys)


def topic_config_keys(release: Release, *, include_internal: bool = False) -> dict[str, ConfigKey]:
    """The topic configs of `release`, ordered by name. Internal keys (remote storage in
    3.1-3.5) are valid names but left out unless `include_internal`."""
    keys = _keys_in_definition_order(normalize_release(release), include_internal)
    return {k.name: k for k in sorted(keys, key=lambda k: k.name)}


def key_since(name: str) -> Release | None:
    """The first release that defines topic config `name` (None if none does)."""
    sinces = [k.since for k in TOPIC_CONFIG_KEYS if k.name == name]
    return min(sinces, key=normalize_release) if sinces else None


# --------------------------------------------------------------------------------------------
# Validation (LogConfig.validate and what ZkAdminManager/AdminZkClient wrap around it)


def _unknown_name_message(name: str, release: Release) -> str:
    if release < (0, 10, 1):
        return f"requirement failed: Unknown configuration `{name}`."
    if release < (0, 11):
        return f"Unknown Log configuration {name}."
    return f"Unknown topic config name: {name}"


def validate_topic_configs(
    configs: Mapping[str, str | None],
    release: Release,
    *,
    remote_storage_system_enabled: bool = False,
) -> None:
    """Raise InvalidConfig (code 40) if Kafka's LogConfig.validate refuses `configs`.

    Order: unknown names (caller's order); each value parsed and validated in Kafka's definition
    order, so the first bad one in that order is reported; min.compaction.lag.ms >
    max.compaction.lag.ms (2.3+); 3.9's ZK-mode refusal of remote.log.copy.disable /
    remote.log.delete.on.disable; 3.6+ remote.storage.enable on a broker without tiered storage.
    """
    r = normalize_release(release)
    keys = _keys_in_definition_order(r, True)
    known = {k.name for k in keys}
    for name in configs:
        if name not in known:
            raise InvalidConfig(_unknown_name_message(name, r))
    values: dict[str, ConfigValue] = {}
    for key in keys:
        text = configs.get(key.name)
        if text is None:
            assert key.default is not None, key.name
            values[key.name] = parse_value(key, key.default)
        else:
            values[key.name] = validate_value(key, text)
    if r >= (2, 3):
        low, high = values["min.compaction.lag.ms"], values["max.compaction.lag.ms"]
        assert isinstance(low, int) and isinstance(high, int)
        if low > high:
            raise InvalidConfig(
                "conflict topic config setting min.compaction.lag.ms "
                f"({low}) > max.compaction.lag.ms ({high})"
            )
    if r >= (3, 6):
        _validate_remote_storage(values, r, remote_storage_system_enabled)


def _validate_remote_storage(
    values: Mapping[str, ConfigValue], release: Release, system_enabled: bool
) -> None:
    if release >= (3, 9) and (
        values["remote.log.delete.on.disable"] is True or values["remote.log.copy.disable"] is True
    ):
        raise InvalidConfig(
            "It is invalid to set `remote.log.delete.on.disable` or "
            "`remote.log.copy.disable` under Zookeeper's mode."
        )
    if values["remote.storage.enable"] is not True:
        return
    if not system_enabled:
        raise InvalidConfig(
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
            config_exception=True,
        )
    policy = values["cleanup.policy"]
    if isinstance(policy, list) and any("compact" in p.lower() for p in policy):
        raise InvalidConfig(
            "Remote log storage is unsupported for the compacted topics", config_exception=True
        )
    total_bytes, local_bytes = values["retention.bytes"], values["local.retention.bytes"]
    assert isinstance(total_bytes, int) and isinstance(local_bytes, int)
    if total_bytes > -1:
        _check_local_retention("local.retention.bytes", local_bytes, "retention.bytes", total_bytes)
    total_ms, local_ms = values["retention.ms"], values["local.retention.ms"]
    assert isinstance(total_ms, int) and isinstance(local_ms, int)
    if total_ms != -1:
        _check_local_retention("local.retention.ms", local_ms, "retention.ms", total_ms)


def _check_local_retention(local_name: str, local: int, total_name: str, total: int) -> None:
    if local == -2:  # derived from the total
        return
    if local == -1:
        raise config_error(
            local_name, "-1", f"Value must not be -1 as {total_name} value is set as {total}."
        )
    if local > total:
        raise config_error(
            local_name,
            str(local),
            f"Value must not be more than {total_name} property value: {total}",
        )


# --------------------------------------------------------------------------------------------
# DescribeConfigs (ConfigHelper.createTopicConfigEntry)


class BrokerLogDefaults(Hashable, Protocol):
    """What a broker's own configuration contributes to a topic's described configs
    (implemented by `zkbroker.broker.rules.broker_config.BrokerConfig`; must be hashable)."""

    def topic_value(self, key: ConfigKey) -> str | None: ...

    def topic_synonyms(self, key: ConfigKey) -> list[ConfigSynonym]: ...


def describe_topic_config(
    topic: str,
    overrides: Mapping[str, str],
    release: Release,
    broker: BrokerLogDefaults,
) -> list[ConfigEntry]:
    """Every config DescribeConfigs lists for `topic` with these znode overrides, sorted by name.

    Public keys of the release plus every override (internal and unknown keys too). An unknown
    key has type UNKNOWN and, from 2.6, is treated as sensitive (value null); before 2.6 its raw
    value was shown. An override that does not parse or validate raises InvalidConfig with
    UNKNOWN_SERVER_ERROR: Kafka fails building the topic's LogConfig and answers -1 (message null).
    `topic` is not needed for the answer; it is taken for the handlers' convenience.

    `broker` supplies the values and synonyms the broker's own configs give the keys the topic
    does not override.
    """
    # Most topics share their overrides (often none): the answer is computed once per set.
    return list(
        _describe_cached(tuple(sorted(overrides.items())), normalize_release(release), broker)
    )


@functools.lru_cache(maxsize=1024)
def _describe_cached(
    overrides_items: tuple[tuple[str, str], ...], r: Release, broker: BrokerLogDefaults
) -> tuple[ConfigEntry, ...]:
    overrides = dict(overrides_items)
    every = {k.name: k for k in _keys_in_definition_order(r, True)}
    names = {k.name for k in every.values() if not k.internal} | set(overrides)
    entries = []
    for name in sorted(names):
        key = every.get(name)
        overridden = name in overrides
        if key is None:
            sensitive = r >= (2, 6)
            value = None if sensitive else overrides[name]
            config_type = ConfigType.UNKNOWN
            from_broker: list[ConfigSynonym] = []
        else:
            sensitive = key.sensitive or key.type is ConfigType.PASSWORD
            if overridden:
                try:
                    value = render_value(key, validate_value(key, overrides[name]))
                except InvalidConfig as e:
                    raise InvalidConfig(
                        e.message, error_codes.UNKNOWN_SERVER_ERROR, config_exception=True
                    ) from e
            else:
                value = broker.topic_value(key)
            if sensitive:
                value = None
            config_type = key.type
            from_broker = broker.topic_synonyms(key)
        synonyms = (
            [ConfigSynonym(name, value, ConfigSource.TOPIC_CONFIG), *from_broker]
            if overridden
            else from_broker
        )
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                is_sensitive=sensitive,
                read_only=False,
                config_type=config_type,
                synonyms=tuple(synonyms),
                documentation=None,
            )
        )
    return tuple(entries)
