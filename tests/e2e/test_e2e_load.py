"""A burst beyond the functions' concurrency is shed with 429 envelopes, never failed connections.

A stack of its own, with one execution environment per function and a short wait for it
(`--throttle-wait`, here through `MEMORY_LOCAL_THROTTLE_WAIT_S`): every answer to a burst of
concurrent clients is a 202 or API Gateway's THROTTLED envelope (docs/architecture.md "Local stack").
"""

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from e2e_support import Api, LocalStackProcess, assert_envelope, stub_stack_environment, unique

pytestmark = pytest.mark.e2e

BURST = 60


@pytest.fixture(scope="module")
def narrow_stack(stub, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStackProcess]:
    if stub is None:
        pytest.skip("starts a local stack of its own")
    environment = stub_stack_environment(stub.base_url, MEMORY_LOCAL_THROTTLE_WAIT_S="0.2")
    log_path = Path(tmp_path_factory.mktemp("narrow")) / "stack.log"
    process = LocalStackProcess(log_path, environment, concurrency=1).start()
    try:
        yield process
    finally:
        assert process.stop() == 0, process.log_tail(40)


def test_a_burst_is_shed_with_throttled_envelopes(narrow_stack: LocalStackProcess) -> None:
    tenant, url = unique("load"), narrow_stack.url

    def send(n: int) -> requests.Response | str:
        try:  # a session per client: BURST connections at once
            return requests.post(
                f"{url}{Api.memory_path(tenant, unique('user'))}",
                json={"items": [{"text": f"Burst item {n}."}]},
                timeout=30,
            )
        except requests.RequestException as exc:
            return type(exc).__name__

    with ThreadPoolExecutor(max_workers=BURST) as pool:
        answers = list(pool.map(send, range(BURST)))
    failures = [a for a in answers if isinstance(a, str)]
    assert failures == [], f"connection failures: {failures}"
    responses = [a for a in answers if not isinstance(a, str)]
    statuses = sorted({r.status_code for r in responses})
    assert set(statuses) <= {202, 429, 503}, statuses
    for response in responses:
        if response.status_code != 202:
            assert_envelope(response, response.status_code, "throttled")
    assert 202 in statuses and 429 in statuses, statuses  # some served, the rest shed
    # Every accepted item is condensed: shedding loses nothing that was accepted.
    api = Api(url, diagnostics=lambda: narrow_stack.log_tail(40))
    for response in responses:
        if response.status_code == 202:
            api.wait_completed(tenant, response.json()["jobs"])
