"""Change events on the running local stack (docs/operations.md "Local stack"): a turn posted over
HTTP is condensed, and its `Memory Updated` and `Job Finished` reach a queue subscribed to the
stack's bus, read by `hippocampus events --queue-url` (the stack's own queue, hippocampus-dev-events,
takes every test's events; its lookup by name is tested in tests/client/test_client_cli_events.py)."""

import json
from typing import Any

import pytest
from click.testing import CliRunner
from e2e_support import Api, LocalStackProcess, marker

from hippocampus_client.cli import cli
from tests.support.waiting import ASYNC_DEADLINE_S, wait_for

pytestmark = pytest.mark.e2e


def test_a_turn_publishes_memory_updated_and_job_finished_on_the_events_queue(
    api: Api, local_stack: LocalStackProcess, llm: Any, tenant: str, user: str, tenant_events: str
) -> None:
    assert "Events: every change on SQS hippocampus-dev-events" in local_stack.log_text()
    word = marker()  # the stub LLM keeps it: the turn makes a new version of the summary
    [job] = api.ingest(tenant, user, [{"text": f"I live in Lisbon and I repair bicycles {word}."}])
    seen: dict[str, dict[str, Any]] = {}

    def arrived() -> bool:
        result = CliRunner().invoke(cli, ["--json", "events", "--queue-url", tenant_events])
        assert result.exit_code == 0, result.output
        for line in result.stdout.splitlines():
            event = json.loads(line)
            detail = event["detail"]
            if (detail["tenant_id"], detail["user_id"]) == (tenant, user):
                seen[event["detail-type"]] = event
        return {"Memory Updated", "Job Finished"} <= set(seen)

    wait_for(arrived, ASYNC_DEADLINE_S, 0.2, "the turn's events on the tenant's queue", local_stack.log_tail)
    finished, updated = seen["Job Finished"], seen["Memory Updated"]
    assert finished["source"] == updated["source"] == "hippocampus"
    assert (finished["detail"]["job_id"], finished["detail"]["status"]) == (job["job_id"], "completed")
    assert updated["detail"]["version"] == finished["detail"]["memory_version"] >= 1
    assert job["job_id"] in updated["detail"]["job_ids"]
    assert word not in json.dumps(seen) and "Lisbon" not in json.dumps(seen)  # ids and counts, no content
