"""The README's five lines of Python, as written there, against the local stack: a new user pastes
them after `make dev` and sees the summary printed (README "From Python: the client, in five
lines")."""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from e2e_support import Api, wait_for

pytestmark = pytest.mark.e2e
README = Path(__file__).resolve().parents[2] / "README.md"


def five_lines() -> str:
    section = README.read_text().split("### From Python: the client, in five lines", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README shows the client's five lines"
    return match.group(1)


def read(api: Api, path: str) -> Any:
    """The body of a GET, waiting out a 429 or 503 as the API asks a client to."""

    def answer() -> requests.Response | None:
        response = api.request("GET", path)
        return None if response.status_code in (429, 503) else response

    response = wait_for(answer, what=f"an answer to GET {path}", diagnostics=api.diagnostics)
    assert response.status_code == 200, response.text
    return response.json()


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

    # What the last line printed is the user's summary, stored once the turn was condensed (the
    # stub LLM's text); never `None`, which is what a `get` before the condensation returns.
    printed = done.stdout.strip()
    stored = read(api, Api.memory_path(tenant, user))
    assert stored["memory"] and printed == stored["memory"], (printed, stored, done.stderr)
    episodes = read(api, Api.memory_path(tenant, user) + "/episodes")["episodes"]
    assert [episode["text"] for episode in episodes] == ["User: I sell candles on Shopify.\nAssistant: Nice!"]
