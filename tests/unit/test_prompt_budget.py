"""Bounded prompts: a backlog larger than one prompt goes in consecutive calls, oldest first, each
with its own write; no call is ever over the budget (docs/architecture.md "The condenser")."""

import re

from hippocampus.contracts.models import IngestRequest
from hippocampus.contracts.ports import LlmResult
from tests.support.fakes import Ports

T, U = "acme", "alice"
BUDGET = 100_000


class ContextLimitedModel:
    """An LLM that refuses a prompt over its context, like a provider's context-length error."""

    name = "limited"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(
        self, system: str, prompt: str, timeout_s: float | None = None, schema: object = None
    ) -> LlmResult:
        if len(prompt) > BUDGET:
            raise ValueError(f"context_length_exceeded: {len(prompt)} characters")
        self.prompts.append(prompt)
        return LlmResult(f"Alice said things; call {len(self.prompts)}.")


def test_a_backlog_of_100_items_of_32000_characters_completes_in_bounded_calls():
    ports = Ports()
    for index in range(100):
        item = {"id": f"t{index}", "text": f"Item {index:03d} " + "x" * 31_990}
        ports.ingest().ingest(T, U, IngestRequest.model_validate({"items": [item]}), f"r{index}")
    model = ContextLimitedModel()
    failures = ports.consolidation(model, prompt_max_chars=BUDGET).process_batch(ports.queued()).failures
    assert failures == {}
    assert all(job.status == "completed" for job in ports.jobs.jobs.values())
    assert 30 <= len(model.prompts) <= 50 and max(len(p) for p in model.prompts) <= BUDGET
    firsts = [int(re.findall(r"Item (\d{3}) x", p)[0]) for p in model.prompts]
    assert firsts == sorted(firsts) and firsts[0] == 0  # oldest first
    assert ports.reads().get_memory(T, U).version == len(model.prompts)  # one write per call


def test_an_item_alone_over_the_budget_is_cut_to_it_not_dead_lettered():
    ports = Ports()
    pairs = [{"user": "u" * 30_000, "assistant": "a" * 30_000} for _ in range(3)]  # 180,000 characters
    request = IngestRequest.model_validate({"items": [{"id": "huge", "user_assistant_pairs": pairs}]})
    (job,) = ports.ingest().ingest(T, U, request, "r1").jobs
    model = ContextLimitedModel()
    assert ports.consolidation(model, prompt_max_chars=BUDGET).process_batch(ports.queued()).failures == {}
    assert ports.jobs.status(job.job_id) == "completed" and len(model.prompts[0]) <= BUDGET
