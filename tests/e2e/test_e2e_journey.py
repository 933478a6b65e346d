"""The user journey (docs/api.md), over HTTP: ingest → job → memory, and everything around it."""

from urllib.parse import quote

import pytest
from e2e_support import MARKER, Api, assert_envelope, marker, stub_calls_with, unique, wait_for

from hippocampus.contracts import routes
from infra.config import config_from_cdk_json

pytestmark = pytest.mark.e2e


def test_health(api: Api) -> None:
    response = api.request("GET", "/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_openapi_document_describes_every_route(api: Api) -> None:
    response = api.request("GET", "/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1")
    for route in routes.ROUTES:
        if route.path != "/v1/openapi.json":  # the document need not describe itself
            assert route.method.lower() in document["paths"].get(route.path, {}), (
                route,
                sorted(document["paths"]),
            )
    schemas = document["components"]["schemas"]
    assert "ErrorEnvelope" in schemas
    assert {"IngestRequest", "MemoryBody", "JobsResponse"} <= set(schemas)


def test_a_user_with_no_memory_yet(api: Api, tenant: str, user: str) -> None:
    body = api.memory(tenant, user)
    assert body == {
        "tenant_id": tenant,
        "user_id": user,
        "memory": None,
        "version": 0,
        "word_count": 0,
        "updated_at": None,
        "facts": [],
    }
    assert api.history(tenant, user) == []


def test_ingest_then_job_then_memory(api: Api, stub, tenant: str, user: str) -> None:
    word = marker()
    jobs = api.ingest(
        tenant,
        user,
        [
            {
                "id": "turn-42",
                "user_assistant_pairs": [
                    {
                        "user": f"My name is Alice, I sell candles. Code {word}.",
                        "assistant": "Nice to meet you!",
                    }
                ],
                "user_name": "Alice",
                "custom_instructions": "Focus on business details.",
                "metadata": {"channel": "web"},
                "additional_metadata": {"source": "chat"},
            }
        ],
    )
    job = jobs[0]
    assert job["status"] == "queued"
    assert (job["tenant_id"], job["user_id"], job["item_id"]) == (tenant, user, "turn-42")
    assert job["error"] is None and job["memory_version"] is None

    done = api.wait_job(tenant, job["job_id"])
    assert done["status"] == "completed", done
    assert done["error"] is None
    memory = api.memory(tenant, user)
    assert memory["version"] >= 1
    assert done["memory_version"] == memory["version"]
    assert memory["memory"]
    assert memory["word_count"] == len(memory["memory"].split())
    assert memory["updated_at"] is not None
    if stub is not None:
        assert word in memory["memory"]
        prompt = next(
            " ".join(str(m["content"]) for m in r.messages) for r in stub.requests if word in str(r.messages)
        )
        assert f"Alice: My name is Alice, I sell candles. Code {word}." in prompt
        assert "Assistant: Nice to meet you!" in prompt
        assert "Focus on business details." in prompt


def test_a_chain_of_condensations_keeps_every_item_and_versions_history(
    api: Api, stub, tenant: str, user: str
) -> None:
    words = [marker() for _ in range(4)]
    versions = []
    for word in words:
        (job,) = api.ingest(tenant, user, [{"text": f"Alice noted project code {word}."}])
        done = api.wait_job(tenant, job["job_id"])
        assert done["status"] == "completed", done
        versions.append(done["memory_version"])
    assert versions == sorted(versions) and len(set(versions)) == len(versions), versions

    memory = api.memory(tenant, user)
    assert memory["version"] == versions[-1]
    if stub is not None:
        # Each condensation saw the memory of the previous one: nothing was lost along the chain.
        assert MARKER.findall(memory["memory"]) == words

    history = api.history(tenant, user)
    assert [v["version"] for v in history] == sorted((v["version"] for v in history), reverse=True)
    assert history[0]["version"] == memory["version"]
    assert history[0]["memory"] == memory["memory"]
    assert {v["version"] for v in history} >= set(versions)
    for entry in history:
        assert entry["updated_at"] and isinstance(entry["job_ids"], list)
    assert len(api.history(tenant, user, limit=2)) == 2


def test_facts_are_stored_verbatim_replaced_by_id_and_deleted(api: Api, tenant: str, user: str) -> None:
    (job,) = api.ingest(
        tenant,
        user,
        [{"id": "pref_dark_mode", "text": "Prefers dark mode.", "infer": False, "metadata": {"ui": "web"}}],
    )
    api.wait_job(tenant, job["job_id"])
    facts = api.memory(tenant, user)["facts"]
    assert [(f["id"], f["text"], f["metadata"]) for f in facts] == [
        ("pref_dark_mode", "Prefers dark mode.", {"ui": "web"})
    ]

    (job,) = api.ingest(
        tenant, user, [{"id": "pref_dark_mode", "text": "Prefers light mode.", "infer": False}]
    )
    api.wait_job(tenant, job["job_id"])
    facts = api.memory(tenant, user)["facts"]
    assert [(f["id"], f["text"]) for f in facts] == [("pref_dark_mode", "Prefers light mode.")]
    assert api.memory(tenant, user)["word_count"] == 0  # facts are not counted in the summary

    fact_path = Api.memory_path(tenant, user) + "/facts/pref_dark_mode"
    response = api.request("DELETE", fact_path)
    assert response.status_code == 204, response.text
    assert response.content == b""
    assert api.memory(tenant, user)["facts"] == []
    assert_envelope(api.request("DELETE", fact_path), 404)


def test_put_with_expected_version_and_if_match(api: Api, tenant: str, user: str) -> None:
    path = Api.memory_path(tenant, user)
    first = api.request("PUT", path, json={"memory": "Alice sells candles.", "expected_version": 0})
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 1
    assert first.json()["memory"] == "Alice sells candles."
    assert first.headers["ETag"] == '"1"'

    stale = api.request("PUT", path, json={"memory": "Overwritten?", "expected_version": 0})
    assert_envelope(stale, 409, "version_conflict")
    assert api.memory(tenant, user)["memory"] == "Alice sells candles."

    by_header = api.request("PUT", path, json={"memory": "Alice sells soap."}, headers={"If-Match": '"1"'})
    assert by_header.status_code == 200, by_header.text
    assert by_header.json()["version"] == 2
    assert_envelope(api.request("PUT", path, json={"memory": "x"}, headers={"If-Match": '"1"'}), 409)

    missing = api.request("PUT", path, json={"memory": "No version."})
    assert_envelope(missing, 422)
    too_long = api.request("PUT", path, json={"memory": "word " * 500, "expected_version": 2})
    assert_envelope(too_long, 422)
    assert api.memory(tenant, user)["version"] == 2
    history = api.history(tenant, user)
    assert [v["version"] for v in history][:2] == [2, 1]


def test_an_ingested_item_after_a_manual_put_builds_on_it(api: Api, stub, tenant: str, user: str) -> None:
    word, later = marker(), marker()
    response = api.request(
        "PUT", Api.memory_path(tenant, user), json={"memory": f"Hand written {word}.", "expected_version": 0}
    )
    assert response.status_code == 200, response.text
    (job,) = api.ingest(tenant, user, [{"text": f"Later fact {later}."}])
    done = api.wait_job(tenant, job["job_id"])
    assert done["status"] == "completed"
    memory = api.memory(tenant, user)
    assert memory["version"] == 2
    if stub is not None:
        assert MARKER.findall(memory["memory"]) == [word, later]


def test_delete_forgets_the_user_entirely(api: Api, tenant: str, user: str) -> None:
    jobs = api.ingest(
        tenant,
        user,
        [{"text": f"Alice likes {marker()}."}, {"id": "fact-1", "text": "Lives in Lyon.", "infer": False}],
    )
    api.wait_completed(tenant, jobs)
    assert api.memory(tenant, user)["version"] >= 1

    response = api.request("DELETE", Api.memory_path(tenant, user))
    assert response.status_code == 204, response.text
    memory = api.memory(tenant, user)
    assert (memory["memory"], memory["word_count"], memory["facts"]) == (None, 0, [])
    assert api.history(tenant, user) == []
    # Deleting twice is fine.
    assert api.request("DELETE", Api.memory_path(tenant, user)).status_code == 204


def test_items_queued_before_a_delete_never_bring_content_back(llm, api: Api, tenant: str, user: str) -> None:
    word = marker()
    llm.delay_s = 1.5  # the condensation is in flight while the user is deleted
    (job,) = api.ingest(tenant, user, [{"text": f"Secret {word}."}])
    wait_for(lambda: stub_calls_with(llm, word), what="the condensation to reach the LLM")
    response = api.request("DELETE", Api.memory_path(tenant, user))
    assert response.status_code == 204
    done = api.wait_job(tenant, job["job_id"])
    assert done["status"] in {"skipped", "completed"}, done
    memory = api.memory(tenant, user)
    assert memory["memory"] is None or word not in memory["memory"], memory
    assert all(word not in (v["memory"] or "") for v in api.history(tenant, user))


def test_another_tenants_job_is_not_found(api: Api, tenant: str, user: str) -> None:
    (job,) = api.ingest(tenant, user, [{"text": "Tenant scoped."}])
    assert api.job(tenant, job["job_id"])["job_id"] == job["job_id"]
    assert_envelope(api.request("GET", f"/v1/tenants/{unique('other')}/jobs/{job['job_id']}"), 404)
    assert_envelope(api.request("GET", f"/v1/tenants/{tenant}/jobs/job-does-not-exist"), 404)
    # The memory of the same user id in another tenant is another memory.
    api.wait_job(tenant, job["job_id"])
    assert api.memory(unique("other"), user)["version"] == 0


def test_idempotency_key_replays_and_conflicts(api: Api, stub, tenant: str, user: str) -> None:
    word = marker()
    body = {"items": [{"text": f"Idempotent {word}."}]}
    headers = {"Idempotency-Key": unique("key")}
    path = Api.memory_path(tenant, user)
    first = api.request("POST", path, json=body, headers=headers)
    assert first.status_code == 202, first.text
    replay = api.request("POST", path, json=body, headers=headers)
    assert replay.status_code == 202, replay.text
    assert replay.json() == first.json()

    conflict = api.request("POST", path, json={"items": [{"text": "Another body."}]}, headers=headers)
    assert_envelope(conflict, 409, "idempotency_conflict")

    (job,) = first.json()["jobs"]
    assert api.wait_job(tenant, job["job_id"])["status"] == "completed"
    assert api.memory(tenant, user)["version"] == 1  # enqueued once, condensed once
    if stub is not None:
        assert stub_calls_with(stub, word) == 1


def test_resending_an_item_id_with_the_same_content_returns_the_original_job(
    api: Api, stub, tenant: str, user: str
) -> None:
    word = marker()
    item = {"id": "turn-7", "text": f"Duplicate {word}."}
    (job,) = api.ingest(tenant, user, [item])
    assert api.wait_job(tenant, job["job_id"])["status"] == "completed"
    (again,) = api.ingest(tenant, user, [item])
    assert again["job_id"] == job["job_id"]
    assert again["status"] == "completed"
    assert api.memory(tenant, user)["version"] == 1
    if stub is not None:
        assert stub_calls_with(stub, word) == 1


def test_the_summary_never_exceeds_the_word_budget(llm, api: Api, tenant: str, user: str) -> None:
    (job,) = api.ingest(tenant, user, [{"text": "LONGANSWER please: a very talkative model."}])
    assert api.wait_job(tenant, job["job_id"])["status"] == "completed"
    memory = api.memory(tenant, user)
    assert memory["memory"]
    assert 0 < memory["word_count"] <= config_from_cdk_json().max_words


def test_percent_encoded_identifiers_name_the_same_user(api: Api, tenant: str) -> None:
    user = f"{unique('alice')}@example.com"  # '@' is allowed in ids; encodeURIComponent sends %40
    path = Api.memory_path(tenant, quote(user, safe=""))
    response = api.request("PUT", path, json={"memory": "Encoded id.", "expected_version": 0})
    assert response.status_code == 200, response.text
    assert response.json()["user_id"] == user
    assert api.memory(tenant, user)["memory"] == "Encoded id."
