"""examples/agents.py against the running local stack (docs/api.md "Agent scopes"): two agents share
what the user taught both and keep their notes private, and a follower of `hippocampus events`
sees each agent's changes and the receipts of both forgets."""

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from e2e_support import ROOT, LocalStackProcess

from hippocampus_client.cli import cli
from tests.support.waiting import ASYNC_DEADLINE_S, wait_for

pytestmark = pytest.mark.e2e


def test_the_two_agent_example_keeps_notes_private_and_its_changes_reach_the_events_queue(
    local_stack: LocalStackProcess, llm: Any, tenant: str, user: str, tenant_events: str
) -> None:
    environment = {
        k: v
        for k, v in os.environ.items()  # noqa: TID251 - the child inherits PATH, HOME, ...
        if not k.startswith(("OPENAI_", "HIPPOCAMPUS_"))
    }
    command = [sys.executable, "examples/agents.py", "--endpoint", local_stack.url, "--tenant", tenant]
    run = subprocess.run(
        [*command, "--user", user], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    output = run.stdout
    # What each agent found: the shared memory and its own, never the other's notes.
    research, writer = re.search(r" research: (.*?)\n writer: (.*?)\n\n", output, re.S).groups()  # type: ignore[union-attr]
    assert "[agent " in research and "Red Sea" in research and "Reefs at Risk" not in research
    assert "[agent " in writer and "Reefs at Risk" in writer and "Red Sea" not in writer
    writer_receipt = re.search(r"receipt of the writer's scope: (del_\w+)", output)
    user_receipt = re.search(r"receipt of the user: (del_\w+)", output)
    assert writer_receipt and user_receipt, output
    seen: list[dict[str, Any]] = []

    def arrived() -> bool:
        result = CliRunner().invoke(cli, ["--json", "events", "--queue-url", tenant_events])
        assert result.exit_code == 0, result.output
        events = [json.loads(line) for line in result.stdout.splitlines()]
        seen.extend(e for e in events if (e["detail"]["tenant_id"], e["detail"]["user_id"]) == (tenant, user))
        forgotten = {e["detail"]["receipt_id"]: e for e in seen if e["detail-type"] == "User Forgotten"}
        finished = {e["detail"].get("agent_id") for e in seen if e["detail-type"] == "Job Finished"}
        return {writer_receipt[1], user_receipt[1]} <= set(forgotten) and {
            "research",
            "writer",
            None,
        } <= finished

    wait_for(
        arrived, ASYNC_DEADLINE_S, 0.2, "the example's events on the tenant's queue", local_stack.log_tail
    )
    forgotten = {e["detail"]["receipt_id"]: e["detail"] for e in seen if e["detail-type"] == "User Forgotten"}
    assert forgotten[writer_receipt[1]]["agent_id"] == "writer"
    assert "agent_id" not in forgotten[user_receipt[1]]
    assert forgotten[user_receipt[1]]["erased"]["dynamodb"]["agent_scopes"] == 1
    assert "Red Sea" not in json.dumps(seen) and "Lisbon" not in json.dumps(seen)  # ids and counts only
