"""Many users at once: every item lands in its own user's memory, none is lost, none leaks; and
many writers of one user: every request answered, every fact stored once."""

import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from e2e_support import MARKER, Api, marker, unique

pytestmark = pytest.mark.e2e

USERS = 12
ITEMS_PER_USER = 5
WRITERS, REQUESTS_PER_WRITER = 20, 3


def test_many_users_in_parallel_lose_nothing_and_leak_nothing(api: Api, stub, tenant: str) -> None:
    users = [unique("user") for _ in range(USERS)]
    words = {user: [marker() for _ in range(ITEMS_PER_USER)] for user in users}
    # Every item is its own request, all users interleaved, several requests of one user in flight
    # at once: the condenser sees concurrent writers and redeliveries, the memory must not.
    requests = [
        (user, word) for index in range(ITEMS_PER_USER) for user in users for word in [words[user][index]]
    ]

    def send(request: tuple[str, str]) -> tuple[str, str]:
        user, word = request
        (job,) = api.ingest(tenant, user, [{"text": f"{user} mentioned {word}."}])
        return user, job["job_id"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        jobs = list(pool.map(send, requests))
        done = list(pool.map(lambda job: api.wait_job(tenant, job[1], timeout_s=60), jobs))
    assert [job["status"] for job in done] == ["completed"] * len(done), [
        j for j in done if j["status"] != "completed"
    ]

    for user in users:
        memory = api.memory(tenant, user)
        assert memory["user_id"] == user
        assert 1 <= memory["version"] <= ITEMS_PER_USER
        found = set(MARKER.findall(memory["memory"] or ""))
        others = {word for other in users if other != user for word in words[other]}
        assert not found & others, f"{user} sees another user's items: {found & others}"
        if stub is not None:
            assert found == set(words[user]), f"{user} lost items: {set(words[user]) - found}"
        # Each version is recorded once, newest first, and the jobs of all versions are this user's.
        history = api.history(tenant, user)
        assert [v["version"] for v in history] == list(range(memory["version"], 0, -1))
        user_jobs = {job_id for job_user, job_id in jobs if job_user == user}
        applied = [job_id for version in history for job_id in version["job_ids"]]
        assert sorted(applied) == sorted(user_jobs), "every job applied exactly once, to its own user"


def test_concurrent_manual_edits_never_overwrite_silently(api: Api, tenant: str, user: str) -> None:
    path = Api.memory_path(tenant, user)

    def put(text: str) -> int:
        return api.request("PUT", path, json={"memory": text, "expected_version": 0}).status_code

    with ThreadPoolExecutor(max_workers=6) as pool:
        statuses = list(pool.map(put, [f"Edit number {i}." for i in range(6)]))
    assert sorted(statuses) == [200] + [409] * 5, statuses
    memory = api.memory(tenant, user)
    assert memory["version"] == 1
    assert len(api.history(tenant, user)) == 1


def post_retrying(api: Api, path: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """POST as a client does: a 429 or 503 is sent again after a jittered pause, within 60 s."""
    deadline = time.monotonic() + 60
    pause = 0.1
    while True:
        response = api.request("POST", path, json={"items": items})
        if response.status_code not in (429, 503) or time.monotonic() > deadline:
            assert response.status_code == 202, response.text
            jobs: list[dict[str, Any]] = response.json()["jobs"]
            return jobs
        time.sleep(random.uniform(0, pause))
        pause = min(pause * 2, 2.0)


def test_twenty_writers_of_one_user_are_all_acknowledged_and_applied_once(
    api: Api, tenant: str, user: str
) -> None:
    """Agents and services writing facts and turns to one user at once: no request is refused for
    another's sake (only throttled, and sent again), and what is stored is what was acknowledged."""
    path = Api.memory_path(tenant, user)

    def writer(n: int) -> list[dict[str, Any]]:
        jobs = []
        for request in range(REQUESTS_PER_WRITER):
            facts = [
                {"id": f"w{n}-r{request}-{k}", "text": f"Writer {n} fact {request}.{k}.", "infer": False}
                for k in range(2)
            ]
            turn = {"id": f"w{n}-t{request}", "text": f"Writer {n} says turn {request}."}
            jobs += post_retrying(api, path, [*facts, turn])
        return jobs

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        acknowledged = [job for jobs in pool.map(writer, range(WRITERS)) for job in jobs]
    fact_jobs = [job for job in acknowledged if "-r" in job["item_id"]]
    assert [job["status"] for job in fact_jobs] == ["completed"] * (WRITERS * REQUESTS_PER_WRITER * 2)
    stored = sorted(fact["id"] for fact in api.memory(tenant, user)["facts"])
    assert stored == sorted(job["item_id"] for job in fact_jobs)  # each acknowledged fact, once
    turns = [job for job in acknowledged if "-t" in job["item_id"]]
    assert len({job["job_id"] for job in turns}) == WRITERS * REQUESTS_PER_WRITER
    api.wait_completed(tenant, turns)
