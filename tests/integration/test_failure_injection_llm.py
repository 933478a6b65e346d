"""Keep them closed: the LLM fails (5xx, timeout, empty, garbage, huge), the memory and the queue hold.

The helpers are test_failure_injection.py's: a `ScriptedModel` condenses on the real adapters.
"""

import boto3
import pytest

from hippocampus import wiring
from hippocampus.contracts.prompt_format import count_words
from tests.integration.test_failure_injection import (
    MAX_WORDS,
    assert_retried_then_failed,
    job,
    memory,
    with_memory_and_one_item,
)
from tests.support.clients import ClientProxy, proxied_service
from tests.support.fakes import ScriptedModel


@pytest.fixture
def build(aws, monkeypatch):
    """A service on the real adapters, condensing with `model`."""
    monkeypatch.setenv("MEMORY_MAX_WORDS", str(MAX_WORDS))
    wiring.reset()
    clients = {name: ClientProxy(boto3.client(name)) for name in ("dynamodb", "s3", "sqs")}
    return lambda model: proxied_service(aws, **clients, model=model)


# --- The LLM -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (RuntimeError("Error code: 503 - upstream unavailable"), "llm_or_dependency_error"),
        (TimeoutError("Request timed out."), "llm_or_dependency_error"),
        ("", "empty_llm_answer"),
        (" \n\t \n", "empty_llm_answer"),
        ("```\n```", "empty_llm_answer"),
        ("```text\n   \n```", "empty_llm_answer"),
        ("<<<OLD_MEMORY>>>\n<<<END_OLD_MEMORY>>>", "empty_llm_answer"),
    ],
    ids=[
        "5xx",
        "timeout",
        "empty",
        "whitespace",
        "empty code fence",
        "code fence of blanks",
        "fence markers",
    ],
)
def test_an_llm_failure_keeps_the_memory_and_retries_until_the_dlq(build, answer, code):
    model = ScriptedModel(answer)
    service = build(model)
    job_id, message = with_memory_and_one_item(service)
    assert_retried_then_failed(service, job_id, message, code)
    assert model.calls == 2  # one call per delivery: a failed answer is never stored, nor retried in place


def test_the_item_condenses_once_the_llm_answers_again(build):
    model = ScriptedModel(TimeoutError("down"), "Alice sells candles. Alice moved to Porto.")
    service = build(model)
    job_id, message = with_memory_and_one_item(service)
    assert service.deliver([message], receive_count=1) == {message["MessageId"]}
    assert job(service, job_id)["status"] == "queued"
    assert service.deliver([message], receive_count=2) == set()
    done = job(service, job_id)
    assert done["status"] == "completed" and done["memory_version"] == 2 and done["error"] is None
    assert "Porto" in memory(service)["memory"]


@pytest.mark.parametrize(
    "answer",
    [
        " ".join(f"Fact{n} holds." for n in range(400)),  # 800 words: 16 times the budget
        " ".join(["x" * 5_000] * 30),  # 30 words of 5,000 characters
    ],
    ids=["words over the budget", "words of 5000 characters"],
)
def test_a_huge_answer_is_held_to_the_budget_and_the_item_completes(build, answer):
    model = ScriptedModel(answer)
    service = build(model)
    job_id, message = with_memory_and_one_item(service)
    assert service.deliver([message], receive_count=1) == set()
    stored = memory(service)
    assert stored["version"] == 2 and 0 < stored["word_count"] <= MAX_WORDS
    assert count_words(stored["memory"]) == stored["word_count"]
    assert len(stored["memory"]) <= MAX_WORDS * 12
    assert job(service, job_id)["status"] == "completed"
    assert model.calls == 2  # the firmer retry, then the cut
    assert service.receive() == []
