"""zkbroker as another project installs it: the wheel and the sdist built from this tree, each in
a fresh venv, beside a project whose own packages are named `broker`, `handlers`, `zk_layout`
and `tests` (the names of zkbroker's own folders).

The built wheel must install exactly one top-level import package, `zkbroker`; the project's
tests use the fixtures (found through the pytest11 entry point, with no conftest.py) and their
own packages in one run; the sdist installs where no compiler runs. Dependencies come from the
package index as they would for a user (pip's cache makes the second run quick).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from zkbroker.broker.toolkit.zookeeper import TEST_ZOOKEEPER_ENV, ZooKeeperEndpoint

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(900)

# The user's own project: packages named like zkbroker's folders, a tests package, and a test
# that uses zkbroker's fixtures and those packages.
_PROJECT = {
    "broker/__init__.py": 'OWN = "the project\'s broker"\n',
    "handlers/__init__.py": "",
    "handlers/context.py": 'OWN = "the project\'s handlers.context"\n',
    "zk_layout/__init__.py": 'OWN = "the project\'s zk_layout"\n',
    "tests/__init__.py": "",
    "tests/helpers.py": 'TOPIC = "orders"\n',
    "tests/test_with_zkbroker.py": """
        import logging

        import zkbroker
        from kafka.admin import KafkaAdminClient, NewTopic
        from broker import OWN as BROKER
        from handlers.context import OWN as HANDLERS
        from zk_layout import OWN as LAYOUT
        from tests.helpers import TOPIC


        def test_own_packages_are_the_projects():
            assert BROKER == "the project's broker"
            assert HANDLERS == "the project's handlers.context"
            assert LAYOUT == "the project's zk_layout"


        def test_the_fixture_serves_and_logs_through_logging(zk_cluster, caplog, capsys):
            caplog.set_level(logging.INFO)
            admin = KafkaAdminClient(bootstrap_servers=zk_cluster.bootstrap_servers)
            try:
                # The README's first snippet: DescribeCluster, served from Kafka 2.8 on.
                assert len(admin.describe_cluster()["brokers"]) == 3
                admin.create_topics([NewTopic(TOPIC, 1, 3)])
            finally:
                admin.close()
            assert zk_cluster.produce(TOPIC, b"one") == 0
            assert [r.value for r in zk_cluster.records(TOPIC)] == [b"one"]
            assert isinstance(zk_cluster, zkbroker.Cluster)
            assert zk_cluster.engine.settings.release_name == "3.9"  # the one default
            assert capsys.readouterr().out == ""


        def test_events_reach_the_projects_logging_at_info(zk_cluster_factory, caplog, capsys):
            caplog.set_level(logging.INFO)  # the project's level: zkbroker sets none of its own
            zk_cluster_factory(brokers=1)
            ours = [r for r in caplog.records if r.name.startswith("zkbroker.")]
            assert "cluster.started" in {r.msg["event"] for r in ours}
            assert min(r.levelno for r in ours) == logging.INFO
            assert capsys.readouterr().out == ""
    """,
}


def _copy_tree(dest: Path) -> None:
    """The files git would commit (links kept as links), not the build leftovers of this
    checkout (an egg-info of an editable install would feed the sdist stale lists)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the work tree, not yet in the index
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def _run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, check=False, **kwargs
    )  # type: ignore[call-overload]
    output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert result.returncode == 0, f"{args} failed:\n{output}"
    return result


def _venv(path: Path, env: dict[str, str]) -> Path:
    _run([sys.executable, "-m", "venv", path], env=env)
    _run([path / "bin" / "python", "-m", "pip", "install", "-q", "--upgrade", "pip"], env=env)
    return path / "bin"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built as `python -m build` builds them (the wheel from the
    sdist)."""
    base = tmp_path_factory.mktemp("zkbroker-build")
    source = base / "source"
    _copy_tree(source)
    _run([sys.executable, "-m", "build", "--outdir", base / "dist", source])
    return base / "dist"


def _clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(REPO))
    )
    env["HOME"] = os.environ.get("HOME", str(tmp))  # pip's cache
    return env


def test_the_wheel_adds_one_import_name_and_serves_a_foreign_projects_tests(
    dist: Path, tmp_path: Path, zookeeper: ZooKeeperEndpoint
) -> None:
    env = _clean_env(tmp_path)
    (wheel,) = dist.glob("zkbroker-*.whl")
    bin_dir = _venv(tmp_path / "venv", env)
    _run([bin_dir / "pip", "install", "-q", wheel, "pytest", "kafka-python"], env=env)

    # What the wheel put in site-packages: one package, its metadata, the command.
    files = "import importlib.metadata as m; print(*m.files('zkbroker'), sep='\\n')"
    listed = _run([bin_dir / "python", "-c", files], env=env, cwd=tmp_path).stdout.split()
    tops = {name.split("/")[0] for name in listed}
    assert tops == {"zkbroker", "zkbroker-0.1.0.dist-info", ".."}, tops
    assert {name for name in listed if name.startswith("..")} == {"../../../bin/zkbroker"}
    help_text = _run([bin_dir / "zkbroker", "--help"], env=env, cwd=tmp_path).stdout
    assert help_text.startswith("usage: zkbroker")

    project = tmp_path / "project"
    for name, text in _PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text))
    env[TEST_ZOOKEEPER_ENV] = zookeeper.connect_string.partition("/")[0]
    result = subprocess.run(
        [
            bin_dir / "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--tb=short",
            "--show-capture=no",
            "tests",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert "3 passed" in result.stdout


def test_the_sdist_installs_where_no_compiler_runs(dist: Path, tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    env["CC"] = env["CXX"] = "false"  # any compilation fails
    (sdist,) = dist.glob("zkbroker-*.tar.gz")
    bin_dir = _venv(tmp_path / "venv", env)
    # zkbroker is built from the sdist; so is pure-sasl (kazoo's SASL, published as an sdist
    # only): neither compiles anything.
    _run([bin_dir / "pip", "install", "-q", sdist], env=env)
    probe = "import zkbroker, zkbroker.broker.cluster; print(zkbroker.Cluster.__module__)"
    assert _run([bin_dir / "python", "-c", probe], env=env, cwd=tmp_path).stdout.strip() == (
        "zkbroker.broker.cluster"
    )
    assert not list((tmp_path / "venv").glob("lib/python*/site-packages/broker"))
    assert _run([bin_dir / "zkbroker", "--help"], env=env, cwd=tmp_path).returncode == 0
