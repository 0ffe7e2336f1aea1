"""Kafka's ConfigDef as pure code: the value engine behind every topic and broker config.

What is here: the config types and records (`ConfigType`, `ConfigSource`, `ConfigKey`,
`ConfigEntry`, `InvalidConfig` with ConfigException's words), Java's value rules (`parse_value`,
`render_value`, `validate_value`: trimming, integer and double syntax, case-insensitive
booleans, comma-split lists, `Double.toString`), the validators (`Range`, `ValidString`,
`ValidList`, the throttled-replica list rule, the gzip level rule) and the inter-broker protocol
versions each release knows with their validator (ApiVersion up to 3.2, MetadataVersion from
3.3), which `message.format.version` and the broker's version keys use.

Not here: which configs exist and their defaults per release (the data:
`zkbroker.broker.rules.config_catalog` for topics, `zkbroker.broker.rules.broker_config_catalog`
for brokers). Pure code: no I/O, no ZooKeeper, no clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from enum import IntEnum
from functools import cache
from types import MappingProxyType

from zkbroker.broker.protocol import error_codes
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
