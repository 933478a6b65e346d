"""A burst still arriving is waited for, so it costs one LLM call; a single turn never waits
(docs/configuration.md `MEMORY_BURST_WINDOW_MS`, docs/architecture.md "The condenser")."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from hippocampus.contracts.models import IngestRequest
from hippocampus.domain.condense.deadline import Deadline
from hippocampus.domain.condense.queued import BURST_MAX_WAIT_S
from tests.support.fakes import Ports, ScriptedModel
from tests.unit.test_burst import echo

T, U = "acme", "alice"
WINDOW_S = 0.3


class Time:
    """A clock that sleeping moves, and turns that arrive while the condenser sleeps."""

    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, tzinfo=UTC)
        self.slept: list[float] = []
        self.on_sleep: Callable[[], None] = lambda: None

    def clock(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)
        self.on_sleep()


def send(ports: Ports, time: Time, *texts: str) -> list[str]:
    jobs = []
    for text in texts:
        request = IngestRequest.model_validate({"items": [{"text": text}]})
        request_id = f"r{len(ports.queue.messages)}"  # each request its own payload
        jobs.append(ports.ingest(clock=time.clock).ingest(T, U, request, request_id).jobs[0].job_id)
    return jobs


def condense_first(ports: Ports, time: Time, model: ScriptedModel, deadline: Deadline | None = None) -> None:
    service = ports.consolidation(model, burst_window_s=WINDOW_S, clock=time.clock, sleep=time.sleep)
    service.process_user(ports.queued()[:1], deadline)


def test_a_burst_still_arriving_is_condensed_once_it_has_ended_in_one_call():
    ports, time = Ports(), Time()
    jobs = send(ports, time, "Turn-0 a.", "Turn-1 b.")
    arrivals = iter([["Turn-2 c.", "Turn-3 d."], ["Turn-4 e."]])
    time.on_sleep = lambda: jobs.extend(send(ports, time, *next(arrivals, [])))
    model = ScriptedModel(reply=echo)
    condense_first(ports, time, model)
    assert model.calls == 1 and len(time.slept) == 3  # two arrivals, then a quiet window
    assert [ports.jobs.status(job_id) for job_id in jobs] == ["completed"] * 5
    assert ports.reads().get_memory(T, U).memory == "Turn-0 Turn-1 Turn-2 Turn-3 Turn-4"


def test_a_single_turn_is_condensed_at_once():
    ports, time = Ports(), Time()
    send(ports, time, "Turn-0 alone.")
    condense_first(ports, time, ScriptedModel(reply=echo))
    assert time.slept == []


def test_a_burst_that_has_already_ended_is_not_waited_for():
    ports, time = Ports(), Time()
    send(ports, time, "Turn-0 a.", "Turn-1 b.")
    time.now += timedelta(seconds=WINDOW_S)
    condense_first(ports, time, ScriptedModel(reply=echo))
    assert time.slept == []


def test_an_endless_burst_is_waited_for_at_most_the_cap_then_condensed():
    ports, time = Ports(), Time()
    send(ports, time, "Turn-0 a.", "Turn-1 b.")
    time.on_sleep = lambda: send(ports, time, "Turn-n more.")
    model = ScriptedModel(reply=echo)
    condense_first(ports, time, model)
    assert 0 < sum(time.slept) <= BURST_MAX_WAIT_S and model.calls == 1


def test_no_wait_eats_into_the_time_the_users_llm_calls_may_need():
    ports, time = Ports(), Time()
    send(ports, time, "Turn-0 a.", "Turn-1 b.")
    tight = Deadline(lambda: 0.1, min_call_s=0.0)  # less time left than one quiet window
    condense_first(ports, time, ScriptedModel(reply=echo), tight)
    assert time.slept == []


def test_a_delete_during_the_wait_wins_over_every_turn_of_the_burst():
    ports, time = Ports(), Time()
    jobs = send(ports, time, "Turn-0 a.", "Turn-1 b.")
    time.on_sleep = lambda: ports.edits().delete_memory(T, U)
    model = ScriptedModel(reply=echo)
    condense_first(ports, time, model)
    assert model.calls == 0 and [ports.jobs.status(job_id) for job_id in jobs] == ["skipped"] * 2
    assert ports.reads().get_memory(T, U).memory is None
