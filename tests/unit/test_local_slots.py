"""Locally, a function's environments are handed out first come, first served (local_stack/slots.py)."""

import threading

import pytest

from local_stack.slots import FairSlots
from tests.support.waiting import wait_for

WAIT_S = 30.0


def queue_up(slots: FairSlots, name: str, served: list[str]) -> threading.Thread:
    """A waiter that records its name once it holds a slot, then frees it; returns once it waits."""

    def take_turn() -> None:
        if slots.acquire(WAIT_S):
            served.append(name)
            slots.release()

    before = slots.waiting()
    thread = threading.Thread(target=take_turn)
    thread.start()
    wait_for(lambda: slots.waiting() == before + 1, WAIT_S, interval_s=0.001, what="the waiter to queue up")
    return thread


def test_waiters_are_served_in_the_order_they_came() -> None:
    slots = FairSlots(1)
    assert slots.acquire(0)
    served: list[str] = []
    waiters = [queue_up(slots, name, served) for name in ("first", "second", "third")]
    slots.release()
    for waiter in waiters:
        waiter.join(WAIT_S)
    assert served == ["first", "second", "third"]


def test_a_slot_freed_while_one_waits_is_the_waiters_not_a_newcomers() -> None:
    slots = FairSlots(1)
    assert slots.acquire(0)
    served: list[str] = []
    waiter = queue_up(slots, "waiter", served)
    slots.release()
    assert slots.acquire(0) is False  # a newcomer at once after the release
    waiter.join(WAIT_S)
    assert served == ["waiter"] and slots.acquire(0)


def test_a_wait_that_runs_out_is_refused_and_leaves_no_one_waiting() -> None:
    slots = FairSlots(2)
    assert slots.acquire(0) and slots.acquire(0)
    assert slots.acquire(0.01) is False
    assert slots.waiting() == 0
    slots.release()
    assert slots.acquire(0)  # the freed slot was not handed to the waiter that gave up


def test_releasing_more_often_than_acquiring_is_an_error() -> None:
    slots = FairSlots(1)
    with pytest.raises(ValueError, match="released more often"):
        slots.release()
