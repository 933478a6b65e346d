"""`with_memory` (client/README.md, "with_memory") and examples/chat.py against the local stack:
what was remembered reaches the model's system message, and the turn comes back as memory."""

import os
import subprocess
import sys
from typing import Any

import pytest
from e2e_support import ROOT, Api, marker, wait_for
from openai import OpenAI

from hippocampus_client import MEMORY_PREFIX, MemoryClient, with_memory
from tests.support.chat_stub import ChatStub

pytestmark = pytest.mark.e2e
ROOM_S = 20.0  # a shared test machine gets more room than the product's 3 s read budget


@pytest.fixture(autouse=True)
def local_only(local_stack: Any) -> None:
    if local_stack is None:
        pytest.skip("runs the example and a local model against the local stack")


def episodes_with(memory: MemoryClient, user: str, text: str) -> list[str]:
    return [episode.text for episode in memory.episodes(user) or [] if text in episode.text]


def summary_with(memory: MemoryClient, user: str, text: str) -> str | None:
    summary = memory.get(user)
    return summary if summary and text in summary else None


def test_the_example_answers_from_a_fact_and_its_turn_is_stored(api: Api, tenant: str, user: str) -> None:
    word = marker()
    with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as memory:
        memory.add(
            user, {"id": "pay", "text": f"Pays suppliers through Stripe, account {word}.", "infer": False}
        )
        environment = {
            k: v
            for k, v in os.environ.items()  # noqa: TID251 - the child inherits PATH, HOME, ...
            if not k.startswith(("OPENAI_", "HIPPOCAMPUS_"))
        }
        question = "How do I pay my suppliers?"
        command = [sys.executable, "examples/chat.py", "--endpoint", api.base_url, "--tenant", tenant]
        run = subprocess.run(
            [*command, "--user", user, "--once", question],
            cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        answer = run.stdout.strip()
        assert answer.startswith("(local model) From memory I was given:") and word in answer, run.stdout
        stored = wait_for(lambda: episodes_with(memory, user, question), ROOM_S, what="the example's turn")
        assert stored == [f"User: {question}\nAssistant: {answer}"]


def test_with_memory_gives_the_model_what_was_remembered_and_remembers_the_turn(
    api: Api, tenant: str, user: str
) -> None:
    first, second = marker(), marker()
    with (
        ChatStub(reply=f"Noted, reference {second} is on file.") as model,
        MemoryClient(endpoint=api.base_url, tenant=tenant, timeout=ROOM_S) as memory,
    ):
        with MemoryClient(endpoint=api.base_url, tenant=tenant, strict=True, timeout=ROOM_S) as setup:
            jobs = setup.add(user, f"User: My shop reference is {first}.\nAssistant: Thanks!")
            assert jobs is not None and setup.wait(jobs, timeout=ROOM_S)
        chat = with_memory(OpenAI(api_key="k", base_url=model.base_url, max_retries=0), memory, user=user)
        system = {"role": "system", "content": "You are a shop assistant."}
        question = {"role": "user", "content": f"Please also file reference {second}."}
        stream = chat.chat.completions.create(model="m", messages=[system, question], stream=True)
        answer = "".join(chunk.choices[0].delta.content or "" for chunk in stream)
        assert answer == f"Noted, reference {second} is on file."
        sent = model.last_messages
        assert [m["role"] for m in sent] == ["system", "system", "user"] and sent[0] == system
        assert sent[1]["content"].startswith(f"{MEMORY_PREFIX}\nWhat you know about this user:\n")
        assert first in sent[1]["content"] and sent[2] == question
        # The turn was sent in the background, condensed (the stack's stub LLM keeps every marker).
        assert memory.flush(ROOM_S)
        summary = wait_for(lambda: summary_with(memory, user, second), ROOM_S, what="the turn condensed")
        assert first in summary
        assert episodes_with(memory, user, second) == [f"User: {question['content']}\nAssistant: {answer}"]
