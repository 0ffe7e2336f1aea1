"""The inputs checked in Python before Spark starts: a local path that does not exist, or a
local glob that matches nothing, is refused at once (the command exits 2) rather than after the
JVM's start, which takes seconds.

Only what Python can answer for sure is checked: `file:` URIs, and paths without a scheme
when their file system is the local one (not under spark-submit, nor with a Hadoop
configuration, `HADOOP_CONF_DIR` or `YARN_CONF_DIR`, whose default file system may be
HDFS). A glob is expanded as Hadoop expands it (`{a,b}`, `[^x]`, `\\x`) and matched with
`glob`, hidden names included. Any other URI (`hdfs:`, `s3a:`) and any glob this module
cannot translate go to Spark, which lists them: nothing Spark would read is ever refused.

Deliberately not here: finding the capture files among what exists (`ingest`, on Spark).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from collections.abc import Iterable

from zkbroker.broker.report.ingest import GLOB_CHARS, REQUESTS_TABLE

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Environment variables naming a Hadoop configuration, which may make a path without a
# scheme mean another file system than the local one (fs.defaultFS).
HADOOP_CONF_ENV = ("HADOOP_CONF_DIR", "YARN_CONF_DIR")
# A glob whose braces expand to more patterns than this is left to Spark.
MAX_PATTERNS = 256


def local_path(given: str, *, schemeless_is_local: bool = True) -> str | None:
    """The local path `given` names, or None when only Spark can tell (another scheme, a
    `file://host/` URI, a path without a scheme when `schemeless_is_local` is false)."""
    match = _SCHEME.match(given)
    if match is None:
        return given if schemeless_is_local else None
    if match.group(1).lower() != "file":
        return None
    rest = given[match.end():]
    if rest.startswith("//"):  # file://authority/path: only an empty authority is ours
        rest = rest[2:]
        if not rest.startswith("/"):
            return None
    return "/" + rest.lstrip("/")


def schemeless_paths_are_local() -> bool:
    """Whether a path without a scheme is a local file for the Spark this run uses."""
    if any(os.environ.get(name) for name in HADOOP_CONF_ENV):
        return False
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return False  # spark-submit: its configuration decides, which Python cannot see
    if importlib.util.find_spec("pyspark") is None:
        return True
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return True  # the session this run starts: local[*] unless configured above
    # A context of the caller's (a notebook, a test session): ask its default file system.
    default_fs = context._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///"
    return str(default_fs).startswith("file:")


def python_globs(pattern: str) -> list[str] | None:
    """The Hadoop glob `pattern` as `glob` patterns whose matches together are Hadoop's,
    or None when it cannot be translated (unbalanced, or too many alternatives)."""
    try:
        found, end = _sequence(pattern, 0, in_braces=False)
    except ValueError:
        return None
    return found if end == len(pattern) else None


def _sequence(p: str, i: int, in_braces: bool) -> tuple[list[str], int]:
    """Parse from `i` to the end, or (in braces) to the next top-level `,` or `}`."""
    out = [""]
    while i < len(p):
        c = p[i]
        if c == "\\":
            if i + 1 == len(p):
                raise ValueError("trailing backslash")
            out = [o + glob.escape(p[i + 1]) for o in out]
            i += 2
        elif c == "[":
            end = p.find("]", i + 1)
            body = p[i + 1 : end]
            # Leave what the two dialects may read differently to Spark.
            if end < 0 or not body or "\\" in body or "[" in body or body == "^":
                raise ValueError("character class")
            klass = "[" + ("!" + body[1:] if body.startswith("^") else body) + "]"
            out = [o + klass for o in out]
            i = end + 1
        elif c == "{":
            alternatives: list[str] = []
            i += 1
            while True:
                part, i = _sequence(p, i, in_braces=True)
                alternatives += part
                if i >= len(p):
                    raise ValueError("unclosed brace")
                i += 1
                if p[i - 1] == "}":
                    break
            out = [o + a for o in out for a in alternatives]
        elif in_braces and c in ",}":
            return out, i
        elif c == "}":
            raise ValueError("unmatched brace")
        else:
            out = [o + c for o in out]
            i += 1
        if len(out) > MAX_PATTERNS:
            raise ValueError("too many alternatives")
    return out, i


def missing(given: str, *, schemeless_is_local: bool = True) -> bool:
    """Whether `given` certainly names nothing: a local path that does not exist, or a local
    glob that matches nothing."""
    path = local_path(given, schemeless_is_local=schemeless_is_local)
    if path is None:
        return False
    if not any(c in path for c in GLOB_CHARS):
        return not os.path.exists(path)
    patterns = python_globs(path)
    if patterns is None:
        return False
    return not any(glob.glob(p, include_hidden=True) for p in patterns)


def check(
    inputs: Iterable[str], baseline: Iterable[str] = (), dataset: str | None = None
) -> None:
    """Raise FileNotFoundError (one line) for inputs that certainly name nothing; with no
    inputs, for a local `dataset` that was never ingested."""
    local = schemeless_paths_are_local()
    inputs, baseline = list(inputs), list(baseline)
    gone = [x for x in inputs if missing(x, schemeless_is_local=local)]
    gone_baseline = [x for x in baseline if missing(x, schemeless_is_local=local)]
    if gone or gone_baseline:
        named = [*gone, *(f"{x} (--baseline)" for x in gone_baseline)]
        noun = "input" if len(named) == 1 else "inputs"
        raise FileNotFoundError(f"{noun} not found (no such file, folder or glob match): "
                                + ", ".join(named))
    if not inputs and dataset is not None:
        requests = f"{dataset.rstrip('/')}/{REQUESTS_TABLE}"
        if missing(requests, schemeless_is_local=local):
            raise FileNotFoundError(
                f"no INPUT given and no dataset at {dataset} to report on"
            )
