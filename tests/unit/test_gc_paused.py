"""`zkbroker.broker.asyncutil.gc_paused`: the collector is off inside, back on after the last
block."""

from __future__ import annotations

import gc

from zkbroker.broker.asyncutil import gc_paused


def test_nested_pauses_turn_the_collector_back_on_once() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_exception_still_turns_it_back_on() -> None:
    try:
        with gc_paused():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.isenabled()


def test_threads_pausing_at_once_leave_the_collector_on() -> None:
    # Two clusters in one process pause from their own loops' threads; a lost update of the
    # shared count would leave the collector off for good (or turn it on under a pause).
    import sys
    import threading

    from zkbroker.broker import asyncutil

    on_inside: list[int] = []

    def pause_often() -> None:
        for _ in range(20_000):
            with gc_paused():
                if gc.isenabled():
                    on_inside.append(1)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        threads = [threading.Thread(target=pause_often) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not on_inside
    assert asyncutil._gc_pauses == 0
    assert gc.isenabled()
