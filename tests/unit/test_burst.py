"""One LLM call per user per burst: a condensation also applies the user's turns queued behind its
records, and their own messages then cost nothing (docs/architecture.md "The condenser")."""

from typing import Any

from hippocampus.contracts.models import IngestRequest
from tests.support.fakes import Ports, ScriptedModel

T, U = "acme", "alice"


def send_one_by_one(ports: Ports, texts: list[str]) -> list[str]:
    jobs = []
    for index, text in enumerate(texts):
        request = IngestRequest.model_validate({"items": [{"id": f"t{index}", "text": text}]})
        jobs.append(ports.ingest().ingest(T, U, request, f"r{index}").jobs[0].job_id)
    return jobs


def echo(prompt: str) -> str:
    """Every sentence of the new content, in order: what the prompt held, and in which order."""
    new = prompt.split("NEW CONTENT", 1)[-1] if "NEW CONTENT" in prompt else prompt
    return " ".join(word for word in new.split() if word.startswith("Turn-")) or "Nothing."


def test_the_first_record_of_a_burst_takes_every_turn_queued_behind_it():
    ports = Ports()
    jobs = send_one_by_one(ports, [f"Turn-{i} happened." for i in range(5)])
    model = ScriptedModel(reply=echo)
    first, *rest = ports.queued()
    ports.consolidation(model).process_batch([first])
    assert model.calls == 1
    assert [ports.jobs.status(job_id) for job_id in jobs] == ["completed"] * 5
    memory = ports.reads().get_memory(T, U)
    assert memory.version == 1 and memory.memory == " ".join(f"Turn-{i}" for i in range(5))  # in order
    ports.consolidation(model).process_batch(rest)  # their own messages arrive: nothing to do
    assert model.calls == 1 and ports.reads().get_memory(T, U).version == 1


def test_turns_taken_ahead_go_back_to_queued_when_the_call_fails_and_complete_later():
    ports = Ports()
    jobs = send_one_by_one(ports, [f"Turn-{i} happened." for i in range(3)])
    first, *rest = ports.queued()
    failing = ScriptedModel(RuntimeError("provider down"))
    assert set(ports.consolidation(failing).process_batch([first]).failures) == {first.message_id}
    assert [ports.jobs.jobs[job_id].status for job_id in jobs] == ["queued"] * 3  # none failed early
    model = ScriptedModel(reply=echo)
    ports.consolidation(model).process_batch(rest)  # the later messages come first now
    assert [ports.jobs.status(job_id) for job_id in jobs[1:]] == ["completed"] * 2


def test_turns_of_the_users_life_before_a_delete_are_never_taken_ahead():
    ports = Ports()
    old = send_one_by_one(ports, ["Turn-0 old."])
    ports.edits().delete_memory(T, U)
    new = send_one_by_one(ports, ["Turn-1 new.", "Turn-2 new."])
    queued: list[Any] = ports.queued()
    model = ScriptedModel(reply=echo)
    ports.consolidation(model).process_batch([queued[1]])  # the first message of the new life
    assert ports.reads().get_memory(T, U).memory == "Turn-1 Turn-2"
    assert ports.jobs.status(old[0]) == "skipped" and ports.jobs.status(new[1]) == "completed"


def test_each_condensation_counts_its_llm_usage_by_tenant(capsys):
    import json

    from hippocampus.observability import metrics

    ports = Ports()
    send_one_by_one(ports, ["Turn-0 happened."])
    capsys.readouterr()
    ports.consolidation(ScriptedModel("Alice did things.")).process_batch(ports.queued())
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (usage,) = [blob for blob in blobs if "TenantLlmCalls" in blob]
    (directive,) = usage["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [["service", "tenant"]] and usage["tenant"] == T
    first = lambda value: value[0] if isinstance(value, list) else value  # noqa: E731 - EMF may list values
    assert first(usage["TenantLlmCalls"]) == 1 and first(usage["TenantPromptTokens"]) > 0
    # The service's own metrics, flushed by the handler later, keep their dimensions: no tenant.
    own = metrics.serialize_metric_set()
    assert "CondensationsOk" in own and own["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
