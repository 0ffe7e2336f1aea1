"""The embedded ZooKeeper's watchdog script keeps its pipe off the fds it hands down (the
data dir's lock is fd 3 in a fresh process), and a close that fails is logged, not dropped.

The JVM side (who holds the lock, a stop that cannot signal) is in
tests/integration/test_zookeeper_lifetime.py.
"""

from __future__ import annotations

import re
import resource

import pytest

from tests.log_events import capture_events
from zkbroker.broker.zookeeper.supervision import (
    _watchdog_pipe_fd,
    _watchdog_script,
    close_lifeline,
)


@pytest.mark.parametrize(
    ("passed", "pipe"),
    [((), 3), ((3,), 4), ((4,), 3), ((3, 4, 5), 6), ((3, 12), 4), ((3, 4, 5, 6, 7, 8), 9)],
)
def test_the_pipe_takes_the_lowest_one_digit_fd_not_handed_down(
    passed: tuple[int, ...], pipe: int
) -> None:
    assert _watchdog_pipe_fd(passed) == pipe


def test_no_one_digit_fd_left_is_refused() -> None:
    with pytest.raises(ValueError, match="no one-digit fd"):
        _watchdog_pipe_fd(range(3, 10))


@pytest.mark.parametrize("pipe", [3, 7, 9])
def test_the_script_moves_the_pipe_to_its_fd_only(pipe: int) -> None:
    script = _watchdog_script(pipe)
    # Every redirection naming an fd names the pipe's (dash: one digit) and stdin.
    assert set(re.findall(r"(\d)<&", script)) == {str(pipe)}
    assert set(re.findall(r"<&(\d)", script)) == {"0", str(pipe)}
    assert script.startswith(f"exec {pipe}<&0 </dev/null\n")
    assert script.endswith(f'exec "$@" {pipe}<&-\n')


@pytest.mark.parametrize("pipe", [0, 2, 10])
def test_the_script_refuses_an_fd_dash_cannot_name_or_a_standard_one(pipe: int) -> None:
    with pytest.raises(ValueError):
        _watchdog_script(pipe)


def test_a_lifeline_that_cannot_be_closed_is_logged() -> None:
    # No fd is open at or above the soft limit: closing it fails with EBADF for real.
    not_open = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    with capture_events() as events:
        close_lifeline(not_open)
    [event] = [e for e in events if e["event"] == "zookeeper.lifeline_close_failed"]
    assert event["log_level"] == "warning"
    assert event["fd"] == not_open
    assert event["error"].startswith("OSError(9,")
