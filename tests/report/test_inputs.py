"""A missing input is refused in Python before Spark starts (exit 2, one line); URIs Python
cannot check go to Spark, and nothing Spark would read is refused."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from zkbroker.broker.cli.main import main
from zkbroker.broker.report import inputs, job


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    folder = tmp_path / "in" / "project=demo"
    folder.mkdir(parents=True)
    for name in ("run-1.jsonl", "run-2.jsonl.gz", ".hidden.jsonl", "a*b.jsonl"):
        (folder / name).write_text("{}\n")
    return tmp_path / "in"


@pytest.mark.parametrize(
    ("given", "path"),
    [
        ("/data/in", "/data/in"),
        ("rel/in", "rel/in"),
        ("file:/data/in", "/data/in"),
        ("file:///data/in", "/data/in"),
        ("file://host/data/in", None),
        ("s3a://bucket/in", None),
        ("hdfs:///ci/captures", None),
        ("HDFS://nn:8020/x", None),
    ],
)
def test_only_local_paths_are_checked_in_python(given: str, path: str | None) -> None:
    assert inputs.local_path(given) == path


def test_paths_and_globs(captures: Path) -> None:
    folder = captures / "project=demo"
    assert not inputs.missing(str(captures))
    assert not inputs.missing(f"file:{folder / 'run-1.jsonl'}")
    assert inputs.missing(str(captures / "nope"))
    assert inputs.missing(f"file://{captures}/nope")
    assert not inputs.missing(f"{captures}/*/run-*.jsonl")
    assert not inputs.missing(f"{captures}/project=*/run-{{9,2}}.jsonl.gz")  # Hadoop braces
    assert not inputs.missing(f"{folder}/.hid*")  # hidden names match, as in Hadoop
    assert not inputs.missing(f"{folder}/a\\*b.jsonl")  # an escaped star
    assert not inputs.missing(f"{folder}/run-[^3].jsonl")
    assert inputs.missing(f"{folder}/run-[^12].jsonl")
    assert inputs.missing(f"{captures}/*/run-{{7,8}}.jsonl")
    assert inputs.missing(f"{captures}/nope/*.jsonl")
    # What the translation cannot be sure of is left to Spark.
    assert not inputs.missing(f"{captures}/nope/{{a,b")
    assert not inputs.missing("s3a://bucket/nothing-here/*.jsonl")


def test_hadoop_globs_as_python_globs() -> None:
    assert inputs.python_globs("/a/{b,c{d,e}}/*.jsonl") == [
        "/a/b/*.jsonl", "/a/cd/*.jsonl", "/a/ce/*.jsonl"]
    assert inputs.python_globs("/a/[^x]?,y") == ["/a/[!x]?,y"]
    assert inputs.python_globs("/a/\\{b") == ["/a/{b"]
    assert inputs.python_globs("/a/{b") is None and inputs.python_globs("/a/b}") is None


def test_a_hadoop_configuration_leaves_paths_without_a_scheme_to_spark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))  # fs.defaultFS may be HDFS
    inputs.check([str(tmp_path / "nope")])
    with pytest.raises(FileNotFoundError):
        inputs.check([f"file:{tmp_path / 'nope'}"])


def test_the_message_names_every_missing_input(captures: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        inputs.check([str(captures), str(tmp_path / "a")], [str(tmp_path / "b")])
    assert str(raised.value) == (
        f"inputs not found (no such file, folder or glob match): {tmp_path / 'a'}, "
        f"{tmp_path / 'b'} (--baseline)"
    )
    with pytest.raises(FileNotFoundError, match="no INPUT given and no dataset at"):
        inputs.check([], dataset=str(tmp_path / "dataset"))


@pytest.mark.parametrize("where", ["input", "baseline", "dataset"])
def test_a_missing_input_exits_2_before_spark_starts(
    where: str,
    captures: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def no_spark(*_: object) -> None:
        raise AssertionError("Spark was started for a missing input")

    monkeypatch.setattr(job, "build_session", no_spark)
    monkeypatch.setattr(job, "plan_class_archive", no_spark)
    missing = str(tmp_path / "nope")
    args = {
        "input": [missing],
        "baseline": [str(captures), "--baseline", missing],
        "dataset": ["--dataset", missing],
    }[where]
    assert main(["report", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zkbroker report: ")
    assert missing in err
    assert not (tmp_path / "out").exists()


def test_the_command_refuses_a_missing_input_in_seconds(tmp_path: Path) -> None:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "zkbroker", "report", str(tmp_path / "nope"), "--out",
         str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    seconds = time.perf_counter() - started
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "zkbroker report: input not found (no such file, folder or glob match): "
        f"{tmp_path / 'nope'}\n"
    )  # one line: no JVM said anything, no progress line ("starting Spark")
    assert done.stdout == ""
    # A JVM start alone takes seconds here; an interpreter start with zkbroker's imports ~1 s.
    assert seconds < 15, seconds
