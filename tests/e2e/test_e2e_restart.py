"""`make dev` killed with SIGKILL right after a 202, then started again on its data directory: the
fact is there, and the queued turn completes, as does the one whose condensation the kill cut short
(docs/operations.md "Local stack").

Runs on the local stack only: it starts its own, on a temporary data directory.
"""

from pathlib import Path

import pytest
from e2e_support import (
    MARKER,
    Api,
    LocalStackProcess,
    marker,
    stub_calls_with,
    stub_stack_environment,
    unique,
    wait_for,
)

pytestmark = pytest.mark.e2e


def test_a_sigkill_loses_nothing_acknowledged(llm, tmp_path: Path) -> None:
    environment = stub_stack_environment(
        llm.base_url, MEMORY_LOCAL_DATA_DIR=str(tmp_path / "state"), PYTHONUNBUFFERED="1"
    )
    tenant, busy, user = unique("restart"), unique("busy"), unique("user")
    cut_short, queued = marker(), marker()
    llm.delay_s = 3.0  # a condensation still running when the stack dies
    first = LocalStackProcess(tmp_path / "first.log", environment, concurrency=1).start()
    try:
        api = Api(first.url)
        (running,) = api.ingest(tenant, busy, [{"text": f"I keep bees {cut_short}."}])
        wait_for(lambda: stub_calls_with(llm, cut_short), what="the first condensation to start")
        fact, turn = api.ingest(
            tenant,
            user,
            [{"id": "pref", "text": "Prefers tea.", "infer": False}, {"text": f"I sail {queued}."}],
        )
        assert (fact["status"], turn["status"]) == ("completed", "queued")
        first.kill()  # right after the 202
    finally:
        first.kill()
    llm.delay_s = 0.0

    second = LocalStackProcess(tmp_path / "second.log", environment, concurrency=1).start()
    try:
        api = Api(second.url, diagnostics=lambda: second.log_tail(40))
        assert "3 messages restored" in second.log_text()  # two turns, the fact's index request
        assert [f["id"] for f in api.memory(tenant, user)["facts"]] == ["pref"]
        assert api.job(tenant, fact["job_id"])["status"] == "completed"
        for job, owner, word in ((turn, user, queued), (running, busy, cut_short)):
            done = api.wait_job(tenant, job["job_id"])
            assert done["status"] == "completed", done
            memory = wait_for(
                lambda owner=owner: api.memory(tenant, owner)["memory"], what="a condensed memory"
            )
            assert MARKER.findall(memory) == [word]
    finally:
        assert second.stop() == 0, second.log_tail(40)
