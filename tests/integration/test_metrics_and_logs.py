"""What operators see: EMF metrics per function, and logs that never carry user content."""

import io
import json
import logging

import pytest

from hippocampus.contracts.ports import LlmResult
from hippocampus.observability import logger

USER = "/v1/tenants/acme/users/alice/memory"


def emf_metrics(output: str) -> dict[str, float]:
    """Sum every EMF metric printed on stdout."""
    totals: dict[str, float] = {}
    for line in output.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        record = json.loads(line)
        for directive in record["_aws"]["CloudWatchMetrics"]:
            assert directive["Namespace"] == "Hippocampus"
            for metric in directive["Metrics"]:
                values = record[metric["Name"]]
                totals[metric["Name"]] = totals.get(metric["Name"], 0) + sum(
                    values if isinstance(values, list) else [values]
                )
    return totals


@pytest.fixture
def service_logs():
    """The JSON lines the service logs (the Powertools logger writes to the stdout it saw at import)."""
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    yield buffer
    logger.removeHandler(handler)


class VerboseLlm:
    """Answers with three times the word budget."""

    name = "verbose"

    def __init__(self, words: int):
        self.words = words

    def complete(self, system, prompt, timeout_s=None, schema=None):
        text = " ".join(f"Alice likes thing{n}." for n in range(self.words))
        return LlmResult(text, prompt_tokens=100, completion_tokens=3 * self.words)


@pytest.fixture
def verbose_llm(service):
    service.condense_with(VerboseLlm(3 * 50))


def test_metrics_of_a_full_cycle(service, verbose_llm, capsys):
    capsys.readouterr()
    service.call("GET", USER)
    service.call(
        "POST",
        USER,
        {"items": [{"text": "Alice sells candles."}, {"id": "f", "text": "Tea.", "infer": False}]},
    )
    service.drain()
    metrics = emf_metrics(capsys.readouterr().out)
    assert metrics["MemoryReads"] == 1 and metrics["MemoryMisses"] == 1
    assert metrics["ItemsIngested"] == 2 and metrics["FactsWritten"] == 1
    assert metrics["CondensationsOk"] == 1
    assert metrics["PromptTokens"] >= 100 and metrics["CompletionTokens"] >= 450
    assert "LlmLatencyMs" in metrics  # the latency alarm reads it
    assert metrics["BudgetCuts"] == 1
    assert 0 < metrics["SummaryWords"] <= 50


def test_budget_holds_whatever_the_llm_returns(service, verbose_llm):
    service.call("POST", USER, {"items": [{"text": "Alice likes many things."}]})
    service.drain()
    memory = service.call("GET", USER).body
    assert 0 < memory["word_count"] <= 50
    assert len(memory["memory"].split()) == memory["word_count"]


def test_logs_never_carry_user_content(service, capsys, caplog, service_logs):
    secret = "zanzibar-swordfish"
    service.call(
        "POST",
        USER,
        {
            "items": [
                {"text": f"My password hint is {secret}."},
                {"id": "f1", "text": f"Fact {secret}", "infer": False},
            ]
        },
    )
    service.drain()
    service.call("PUT", USER, {"memory": f"Hint {secret}", "expected_version": 1})
    service.call("GET", USER)
    service.call("POST", USER, {"items": [{"text": ""}]})  # a validation error echoes no input either
    captured = capsys.readouterr()
    logged = service_logs.getvalue()
    assert '"message":"items accepted"' in logged and '"message":"memory condensed"' in logged
    assert secret not in captured.out + captured.err + caplog.text + logged


def test_duplicates_and_deletes_are_counted(service, capsys):
    item = {"id": "turn-1", "text": "Alice sells candles."}
    service.call("POST", USER, {"items": [item]})
    service.call("POST", USER, {"items": [item]})
    service.call("DELETE", USER)
    metrics = emf_metrics(capsys.readouterr().out)
    assert metrics["DuplicatesSkipped"] == 1 and metrics["Deletes"] == 1


def test_condenser_logs_carry_the_job_ids(service, service_logs):
    job_id = service.call("POST", USER, {"items": [{"text": "Alice sells candles."}]}).body["jobs"][0][
        "job_id"
    ]
    service.drain()
    lines = [json.loads(line) for line in service_logs.getvalue().splitlines()]
    condensed = next(line for line in lines if line["message"] == "memory condensed")
    assert condensed["job_ids"] == [job_id] and condensed["tenant_id"] == "acme"
    accepted = next(line for line in lines if line["message"] == "items accepted")
    assert accepted["correlation_id"]  # the API request id
