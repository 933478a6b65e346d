"""The README's five lines of Python, as written there, against the local stack: a new user pastes
them after `make dev` and the turn reaches the memory (README "From Python: the client, in five
lines")."""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Api, wait_for

pytestmark = pytest.mark.e2e
README = Path(__file__).resolve().parents[2] / "README.md"


def five_lines() -> str:
    section = README.read_text().split("### From Python: the client, in five lines", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README shows the client's five lines"
    return match.group(1)


def test_the_readme_five_lines_run_as_pasted(local_stack: Any, api: Api, tenant: str, user: str) -> None:
    if local_stack is None:
        pytest.skip("the README's lines name the local stack")
    code = five_lines()
    assert len(code.splitlines()) == 5  # an import, a blank line, the client, add and get
    # Only the address, tenant and user change: this stack's port, and names of this test's own.
    script = (
        code.replace("http://127.0.0.1:3000", local_stack.url)
        .replace('"acme"', repr(tenant))
        .replace('"alice"', repr(user))
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr

    # The add went out from the background queue before the interpreter exited, and was condensed:
    # the turn is an episode of the user (the summary itself is the stub LLM's).
    def episode_texts() -> list[str]:
        response = api.request("GET", Api.memory_path(tenant, user) + "/episodes")
        return [episode["text"] for episode in response.json()["episodes"]]

    texts = wait_for(episode_texts, what="the turn as an episode", diagnostics=api.diagnostics)
    assert texts == ["User: I sell candles on Shopify.\nAssistant: Nice!"]
