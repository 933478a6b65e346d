"""The local stack's stand-in for the EventBridge schedule of the condenser's dead-letter pass."""

import threading

from local_stack.schedule import Schedule


def test_the_schedule_sends_scheduled_events_and_survives_a_failing_pass():
    events: list[dict] = []
    twice = threading.Event()

    def invoke(event: dict) -> None:
        events.append(event)
        if len(events) == 1:
            raise RuntimeError("throttled")  # the next tick runs anyway
        twice.set()

    schedule = Schedule(invoke, "eu-west-1", interval_s=0.02)
    schedule.start()
    assert twice.wait(5)
    schedule.stop()
    count = len(events)
    assert all(e["detail-type"] == "Scheduled Event" and e["source"] == "aws.events" for e in events)
    assert events[0]["region"] == "eu-west-1" and events[0]["id"] != events[1]["id"]
    # Nothing after stop: the ticking thread is gone, so no event can follow.
    assert not [thread for thread in threading.enumerate() if thread.name == "schedule"]
    assert len(events) == count
