"""The capture file holds whole requests (config values included): zkbroker creates it 0600,
whatever the umask, and leaves the mode of a file that already exists alone (issue 17 §6)."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from zkbroker.broker.hooks.capture import CAPTURE_FILE_MODE, RequestCapture


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    old = os.umask(0o002)  # a umask that would leave a plain open() group/world-readable
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _open_and_close(path: Path) -> None:
    async def scenario() -> None:
        capture = RequestCapture(str(path))
        capture.open()
        await capture.aclose()

    asyncio.run(scenario())


@pytest.mark.usefixtures("permissive_umask")
def test_a_new_capture_file_is_created_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    _open_and_close(path)
    assert CAPTURE_FILE_MODE == 0o600
    assert _mode(path) == 0o600


@pytest.mark.usefixtures("permissive_umask")
def test_an_existing_capture_file_keeps_its_mode_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text('{"earlier": "line"}\n')
    path.chmod(0o640)
    _open_and_close(path)
    assert _mode(path) == 0o640
    assert path.read_text() == '{"earlier": "line"}\n'
