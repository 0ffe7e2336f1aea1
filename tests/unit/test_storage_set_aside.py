"""Partition directories are set aside with Kafka's names, never deleted silently: another
topic id's directory becomes `-stray` (kept), a deleted topic's goes through `-delete`."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.unit.test_storage_log import put
from zkbroker.broker.storage import LogManager
from zkbroker.broker.storage.partition_dir import SET_ASIDE_DIR, set_aside_dir_name

OLD_ID = uuid.UUID(int=1)
NEW_ID = uuid.UUID(int=2)


def test_a_directory_of_another_topic_id_is_renamed_stray_with_its_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mgr = LogManager(tmp_path)
    put(mgr.get_or_create("orders", 0, OLD_ID), [1, 2, 3])
    mgr.close()
    old_segment = (tmp_path / "orders-0" / "00000000000000000000.log").read_bytes()

    mgr = LogManager(tmp_path)
    log = mgr.get_or_create("orders", 0, NEW_ID)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    (stray,) = tmp_path.glob("orders-0.*-stray")
    assert SET_ASIDE_DIR.match(stray.name)
    assert (stray / "00000000000000000000.log").read_bytes() == old_segment
    assert [r.levelname for r in caplog.records if "partition_dir_set_aside" in r.getMessage()] == [
        "WARNING"
    ]
    assert str(stray) in caplog.text
    put(log, [4])
    mgr.close()

    caplog.clear()
    mgr = LogManager(tmp_path)  # a later start keeps it and says so
    assert stray.is_dir() and "stray_partition_dir_kept" in caplog.text
    assert mgr.get_or_create("orders", 0, NEW_ID).log_end_offset == 1
    mgr.close()


def test_an_open_log_of_an_earlier_topic_is_set_aside_too(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path)
    put(mgr.get_or_create("orders", 0, OLD_ID), [1])
    other = LogManager(tmp_path)  # another process sharing the log dir
    fresh = other.get_or_create("orders", 0, NEW_ID)
    put(fresh, [2, 3])
    assert len(list(tmp_path.glob("orders-0.*-stray"))) == 1
    # The first process's view moves on to the directory now at the path.
    assert mgr.get_or_create("orders", 0, NEW_ID).log_end_offset == 2
    mgr.close()
    other.close()


def test_delete_topic_renames_before_removing_and_a_start_finishes_it(tmp_path: Path) -> None:
    mgr = LogManager(tmp_path)
    put(mgr.get_or_create("gone", 0, OLD_ID), [1])
    mgr.delete_topic("gone")
    assert not any(tmp_path.glob("gone-0*"))
    # A process stopped between the rename and the removal: the next start removes it.
    leftover = tmp_path / set_aside_dir_name("gone", 1, "-delete")
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"x")
    stray = tmp_path / set_aside_dir_name("kept", 0, "-stray")
    stray.mkdir()
    mgr.close()
    LogManager(tmp_path).close()
    assert not leftover.exists() and stray.is_dir()


def test_set_aside_names_stay_within_255_characters() -> None:
    name = set_aside_dir_name("t" * 249, 12, "-delete")
    assert len(name) == 255 and name.endswith("-delete")
    match = SET_ASIDE_DIR.match(name)
    assert match is not None and match.group(2) == "12"
    assert set_aside_dir_name("short", 3, "-stray").startswith("short-3.")
