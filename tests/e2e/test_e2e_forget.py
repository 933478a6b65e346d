"""Right of access and right to be forgotten over HTTP, and the facts limit under real concurrency."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from e2e_support import Api

pytestmark = pytest.mark.e2e


def test_export_then_forget_leaves_nothing_to_export_and_no_replay(api: Api, tenant: str, user: str) -> None:
    path = api.memory_path(tenant, user)
    key = {"Idempotency-Key": f"{user}-k1"}
    jobs = api.ingest(tenant, user, [{"id": "t1", "text": "I sell handmade candles."}], headers=key)
    api.wait_completed(tenant, jobs)
    api.ingest(tenant, user, [{"id": "f1", "text": "Likes tea.", "infer": False}])
    export = api.request("GET", path + "/export")
    assert export.status_code == 200, export.text
    body = export.json()
    assert body["memory"]["facts"][0]["text"] == "Likes tea." and len(body["history"]) == 1
    assert [item["text"] for item in body["items"]] == ["I sell handmade candles."]
    assert {job["item_id"] for job in body["jobs"]} == {"t1", "f1"}

    assert api.request("DELETE", path).status_code == 204
    after = api.request("GET", path + "/export").json()
    assert (after["memory"]["facts"], after["items"], after["history"], after["jobs"]) == ([], [], [], [])
    assert api.request("GET", f"/v1/tenants/{tenant}/jobs/{jobs[0]['job_id']}").status_code == 404
    replay = api.ingest(tenant, user, [{"id": "t1", "text": "I sell handmade candles."}], headers=key)
    assert replay[0]["job_id"] != jobs[0]["job_id"]  # a new request of the user's new life


def test_two_concurrent_fact_requests_never_pass_the_200_facts_limit(
    api: Api, tenant: str, user: str
) -> None:
    path = api.memory_path(tenant, user)
    for start in (0, 100):
        facts = [{"id": f"a{i}", "text": "x", "infer": False} for i in range(start, start + 75)]
        api.ingest(tenant, user, facts)  # 150 facts

    def add(prefix: str) -> int:
        facts = [{"id": f"{prefix}{i}", "text": "x", "infer": False} for i in range(30)]
        return api.request("POST", path, json={"items": facts}).status_code

    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = sorted(pool.map(add, ("b", "c")))
    # One request fits (180 facts); the other finds the facts held, or the limit reached.
    assert statuses[0] == 202 and statuses[1] in (409, 422), statuses
    assert len(api.memory(tenant, user)["facts"]) == 180


def test_nothing_read_before_a_delete_matches_after_it(api: Api, tenant: str, user: str) -> None:
    path = api.memory_path(tenant, user)
    before = api.request("PUT", path, json={"memory": "Alice sells candles.", "expected_version": 0})
    assert before.status_code == 200, before.text
    assert api.request("DELETE", path).status_code == 204
    after = api.request("PUT", path, json={"memory": "Bob sells soap.", "expected_version": 0})
    assert after.status_code == 200 and after.headers["ETag"] != before.headers["ETag"], after.text
    cached = api.request("GET", path, headers={"If-None-Match": before.headers["ETag"]})
    assert cached.status_code == 200 and cached.json()["memory"] == "Bob sells soap."
    stale, old_tag = {"memory": "Alice sells candles in Lyon."}, {"If-Match": before.headers["ETag"]}
    assert api.request("PUT", path, json=stale, headers=old_tag).status_code == 409
    assert api.request("PUT", path, json=stale | {"expected_version": 1}).status_code == 409
    assert api.memory(tenant, user)["memory"] == "Bob sells soap."
