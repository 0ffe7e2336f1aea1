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
