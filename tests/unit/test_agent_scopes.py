"""Agent scopes (docs/api.md "Agent scopes"): an agent's items are private unless shared, its reads
and searches see the shared memory and its own, never another agent's, and forgetting the user
forgets every agent's scope."""

import json
from collections.abc import Callable
from typing import Any

import pytest

from hippocampus.adapters.sqs import message_group_id
from hippocampus.contracts.scopes import agent_scope
from tests.support.fakes import Ports, ScriptedModel

USER = "/v1/tenants/acme/users/alice"
SHARED = USER + "/memory"
RESEARCH = USER + "/agents/research/memory"
WRITER = USER + "/agents/writer/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


def send(ports: Ports, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
    status, headers, answer = ports.call(method, path, body, **kwargs)
    assert status < 300, (status, answer)
    return answer if answer is not None else headers


def fact(item_id: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"items": [{"id": item_id, "text": text, "infer": False, **fields}]}


def turn(text: str, **fields: Any) -> dict[str, Any]:
    return {"items": [{"text": text, **fields}]}


def fact_texts(body: dict[str, Any]) -> set[str]:
    return {entry["text"] for entry in body["facts"]}


def condense(ports: Ports, model: ScriptedModel) -> None:
    ports.consolidation(model).process_batch(ports.queued())
    ports.queue.messages.clear()


def test_an_agents_item_is_private_unless_it_says_share(ports):
    private = send(ports, "POST", RESEARCH, fact("p1", "Is drafting a grant on coral reefs."))
    shared = send(ports, "POST", RESEARCH, fact("s1", "Prefers British spelling.", share=True))
    assert private["jobs"][0]["agent_id"] == "research" and private["jobs"][0]["user_id"] == "alice"
    assert "agent_id" not in shared["jobs"][0]

    read = send(ports, "GET", RESEARCH)
    assert (read["user_id"], read["agent_id"]) == ("alice", "research")
    assert fact_texts(read["scopes"]["agent"]) == {"Is drafting a grant on coral reefs."}
    assert read["scopes"]["agent"]["agent_id"] == "research"
    assert fact_texts(read["scopes"]["shared"]) == {"Prefers British spelling."}
    # The user's routes and every other agent see the shared memory only.
    assert fact_texts(send(ports, "GET", SHARED)) == {"Prefers British spelling."}
    assert fact_texts(send(ports, "GET", WRITER)["scopes"]["agent"]) == set()
    assert fact_texts(send(ports, "GET", WRITER)["scopes"]["shared"]) == {"Prefers British spelling."}


def test_share_is_refused_on_a_users_route(ports):
    status, _, body = ports.call("POST", SHARED, fact("s1", "x", share=True))
    assert status == 422 and body["error"]["details"][0]["field"] == "items[0].share"
    assert ports.queue.messages == [] and send(ports, "GET", SHARED)["facts"] == []


def test_the_agent_etag_changes_with_either_scope(ports):
    send(ports, "POST", RESEARCH, fact("p1", "Reads papers at night."))
    _, headers, _ = ports.call("GET", RESEARCH)
    etag = headers["ETag"]
    assert ports.call("GET", RESEARCH, headers={"If-None-Match": etag})[0] == 304
    send(ports, "POST", SHARED, fact("s1", "Lives in Leeds."))
    assert ports.call("GET", RESEARCH, headers={"If-None-Match": etag})[0] == 200


def test_condensing_an_agents_items_never_shows_another_agents_private_memory(ports):
    send(ports, "POST", RESEARCH, turn("My lab's access code is ORCHID-7."))
    condense(ports, ScriptedModel("Lab access code ORCHID-7."))
    send(ports, "POST", WRITER, turn("Write my bio in a warm tone."))
    send(ports, "POST", SHARED, turn("I moved to Leeds."))
    model = ScriptedModel(reply=lambda prompt: "Noted.")
    condense(ports, model)
    assert len(model.prompts) == 2  # one per scope: the writer's and the shared memory
    assert not any("ORCHID" in prompt for prompt in model.prompts)
    assert send(ports, "GET", RESEARCH)["scopes"]["agent"]["memory"] == "Lab access code ORCHID-7."
    assert "ORCHID" not in str(send(ports, "GET", WRITER)) + str(send(ports, "GET", SHARED))


def test_one_message_group_orders_everything_of_a_user():
    assert message_group_id("acme", agent_scope("alice", "research")) == message_group_id("acme", "alice")
    assert message_group_id("acme", "alice") != message_group_id("acme", "bob")


def test_an_agents_query_and_context_search_the_shared_memory_and_its_own(ports):
    send(ports, "POST", SHARED, fact("s1", "Alice keeps bees in her garden."))
    send(ports, "POST", RESEARCH, fact("p1", "Alice is researching bees and pollination."))
    send(ports, "POST", WRITER, fact("w1", "Alice wants a poem about bees."))
    found = send(ports, "POST", RESEARCH + "/query", {"query": "bees"})
    assert {(r["id"], r["scope"]) for r in found["results"]} == {("s1", "shared"), ("p1", "agent")}
    assert found["shared_version"] == 0
    on_user = send(ports, "POST", SHARED + "/query", {"query": "bees"})
    assert [(r["id"], "scope" in r) for r in on_user["results"]] == [("s1", False)]

    context = send(ports, "POST", RESEARCH + "/context", {"query": "bees"})
    assert "pollination" in context["context"] and "poem" not in context["context"]
    assert {(s["id"], s["scope"]) for s in context["sources"]} == {("s1", "shared"), ("p1", "agent")}


def test_the_same_id_in_both_scopes_is_told_apart(ports):
    send(ports, "POST", SHARED, fact("n1", "Alice drinks green tea."))
    send(ports, "POST", RESEARCH, fact("n1", "Alice drinks tea while reading."))
    context = send(ports, "POST", RESEARCH + "/context", {"query": "tea"})
    assert sorted((s["id"], s["scope"]) for s in context["sources"]) == [("n1", "agent"), ("n1", "shared")]


def test_forgetting_an_agent_keeps_the_shared_memory_and_the_other_agents(ports):
    send(ports, "POST", SHARED, fact("s1", "Lives in Leeds."))
    send(ports, "POST", RESEARCH, fact("p1", "Studies reefs."))
    send(ports, "POST", WRITER, fact("w1", "Likes short sentences."))
    receipt_id = send(ports, "DELETE", RESEARCH)["Deletion-Receipt"]

    assert fact_texts(send(ports, "GET", RESEARCH)["scopes"]["agent"]) == set()
    assert fact_texts(send(ports, "GET", SHARED)) == {"Lives in Leeds."}
    assert fact_texts(send(ports, "GET", WRITER)["scopes"]["agent"]) == {"Likes short sentences."}
    receipt = send(ports, "GET", f"{RESEARCH}/deletions/{receipt_id}")
    assert (receipt["scope"], receipt["user_id"], receipt["agent_id"]) == ("agent", "alice", "research")
    assert receipt["erased"]["dynamodb"]["facts"] == 1
    # Another scope's receipt is not found there.
    assert ports.call("GET", f"{SHARED}/deletions/{receipt_id}")[0] == 404
    assert ports.call("GET", f"{WRITER}/deletions/{receipt_id}")[0] == 404


def test_forgetting_the_user_forgets_every_agents_scope(ports):
    send(ports, "POST", SHARED, fact("s1", "Lives in Leeds."))
    send(ports, "POST", RESEARCH, fact("p1", "Studies reefs."))
    send(ports, "POST", WRITER, turn("Write warmly."))
    receipt_id = send(ports, "DELETE", SHARED)["Deletion-Receipt"]

    for scope in (RESEARCH, WRITER):
        read = send(ports, "GET", scope)
        assert read["scopes"]["agent"]["facts"] == [] and read["scopes"]["shared"]["facts"] == []
    receipt = send(ports, "GET", f"{SHARED}/deletions/{receipt_id}")
    assert receipt["scope"] == "user" and "agent_id" not in receipt
    erased = receipt["erased"]
    assert erased["dynamodb"]["agent_scopes"] == 2
    assert erased["dynamodb"]["facts"] == 2  # the user's and the research agent's
    assert erased["queue"]["messages_skipped"] == 1  # the writer's turn, still queued
    assert ports.agents.listed("acme", "alice") == {}


def test_an_agents_summary_is_replaced_by_hand_and_its_lists_are_its_own(ports):
    written = send(ports, "PUT", RESEARCH, {"memory": "Researches reefs.", "expected_version": 0})
    assert (written["memory"], written["agent_id"]) == ("Researches reefs.", "research")
    assert send(ports, "GET", SHARED)["memory"] is None
    send(ports, "POST", RESEARCH, fact("p1", "Uses Zotero."))
    send(ports, "POST", SHARED, fact("s1", "Lives in Leeds."))
    listed = send(ports, "GET", RESEARCH + "/facts")
    assert [entry["id"] for entry in listed["facts"]] == ["p1"]
    history = send(ports, "GET", RESEARCH + "/history")
    assert [version["memory"] for version in history["versions"]] == ["Researches reefs."]
    assert ports.call("DELETE", RESEARCH + "/facts/s1")[0] == 404  # the shared fact is not the agent's
    send(ports, "DELETE", RESEARCH + "/facts/p1")
    assert fact_texts(send(ports, "GET", RESEARCH)["scopes"]["agent"]) == set()


def test_a_private_job_is_read_back_with_its_agent(ports):
    jobs = send(ports, "POST", RESEARCH, turn("Summarise the reef paper."))["jobs"]
    job = send(ports, "GET", f"/v1/tenants/acme/jobs/{jobs[0]['job_id']}")
    assert (job["user_id"], job["agent_id"]) == ("alice", "research")
    assert send(ports, "GET", f"{RESEARCH}/jobs/{jobs[0]['job_id']}") == job
    assert ports.call("GET", f"{WRITER}/jobs/{jobs[0]['job_id']}")[0] == 404  # another agent's
    shared = send(ports, "POST", RESEARCH, turn("I moved to Leeds.", share=True))["jobs"][0]
    assert send(ports, "GET", f"{RESEARCH}/jobs/{shared['job_id']}")["job_id"] == shared["job_id"]
    listed = send(ports, "GET", RESEARCH + "/jobs")
    assert [entry["job_id"] for entry in listed["items"]] == [jobs[0]["job_id"]]
    assert [entry["job_id"] for entry in send(ports, "GET", SHARED + "/jobs")["items"]] == [shared["job_id"]]


def test_a_users_export_names_its_agents_and_each_agent_exports_its_own(ports):
    send(ports, "POST", SHARED, fact("s1", "Lives in Leeds."))
    send(ports, "POST", RESEARCH, fact("p1", "Studies reefs."))
    send(ports, "POST", WRITER, turn("Write warmly."))
    exported = send(ports, "GET", SHARED + "/export")
    assert exported["agents"] == ["research", "writer"]
    assert [entry["id"] for entry in exported["memory"]["facts"]] == ["s1"]
    own = send(ports, "GET", RESEARCH + "/export")
    assert (own["agent_id"], own["agents"], [f["id"] for f in own["memory"]["facts"]]) == (
        "research",
        [],
        ["p1"],
    )


def test_an_agents_records_name_the_agent(ports):
    send(ports, "POST", RESEARCH, turn("I moved to Lisbon."))
    send(ports, "POST", SHARED, turn("I moved to Leeds."))
    operation = {"op": "add", "record_id": None, "text": "Moved.", "category": "location"}
    answer = json.dumps(
        {"summary": "Moved.", "operations": [operation | {"valid_from": None, "source_items": []}]}
    )
    condense(ports, ScriptedModel(answer))
    [own] = send(ports, "GET", RESEARCH + "/records")["items"]
    [shared] = send(ports, "GET", SHARED + "/records")["items"]
    assert (own["agent_id"], shared["agent_id"]) == ("research", None)


def racing_agent_write(ports: Ports, path: str) -> Callable[[str, str, int], Any]:
    """The archive's erase, with an agent's write landing once right after an agent's scope was
    erased (its tombstone written, its listing not yet removed)."""
    erase = ports.archive.erase_user
    fired: list[bool] = []

    def erase_then_write(tenant_id: str, user_id: str, generation: int) -> Any:
        erased = erase(tenant_id, user_id, generation)
        if "#A#" in user_id and not fired:
            fired.append(True)
            send(ports, "POST", path, fact("p2", "Written while the delete ran."))
        return erased

    return erase_then_write


@pytest.mark.parametrize("deleted", [SHARED, RESEARCH], ids=["the user", "the agent"])
def test_a_write_that_lands_while_a_delete_runs_is_forgotten_by_the_next_delete(ports, monkeypatch, deleted):
    send(ports, "POST", RESEARCH, fact("p1", "Written before."))
    monkeypatch.setattr(ports.archive, "erase_user", racing_agent_write(ports, RESEARCH))
    send(ports, "DELETE", deleted)
    # The write came after the delete's tombstone: it is the new life's, and the agent stays listed.
    assert [f["id"] for f in send(ports, "GET", RESEARCH)["scopes"]["agent"]["facts"]] == ["p2"]
    assert send(ports, "GET", SHARED + "/export")["agents"] == ["research"]
    monkeypatch.undo()
    send(ports, "DELETE", SHARED)
    assert send(ports, "GET", RESEARCH)["scopes"]["agent"]["facts"] == []


def test_a_request_refused_for_the_agents_fact_limit_writes_nothing_of_its_shared_part(ports, monkeypatch):
    monkeypatch.setattr("hippocampus.domain.ingest.fact_rules.MAX_FACTS_PER_USER", 2)
    send(ports, "POST", RESEARCH, {"items": [fact("p1", "One.")["items"][0], fact("p2", "Two.")["items"][0]]})
    mixed = {
        "items": [
            {"id": "s1", "text": "Shared fact.", "infer": False, "share": True},
            {"text": "A shared turn.", "share": True},
            {"id": "p3", "text": "One too many.", "infer": False},
        ]
    }
    status, _, body = ports.call("POST", RESEARCH, mixed)
    assert (status, body["error"]["code"]) == (422, "limit_exceeded")
    assert send(ports, "GET", SHARED)["facts"] == [] and ports.queue.messages == []


def test_an_item_shared_by_an_agent_is_the_item_sent_to_the_users_route(ports):
    turn_item = {"id": "t1", "text": "I moved to Leeds."}
    direct = send(ports, "POST", SHARED, {"items": [turn_item]})["jobs"][0]
    shared = send(ports, "POST", RESEARCH, {"items": [turn_item | {"share": True}]})["jobs"][0]
    assert shared["job_id"] == direct["job_id"]  # a duplicate, as the same item sent twice
    exported = send(ports, "GET", SHARED + "/export")["items"]
    assert exported == [turn_item | {"infer": True}] or all("share" not in item for item in exported)


def test_an_agent_that_only_shared_has_no_private_scope(ports):
    send(ports, "POST", RESEARCH, fact("s1", "Lives in Leeds.", share=True))
    assert send(ports, "GET", SHARED + "/export")["agents"] == []
    receipt_id = send(ports, "DELETE", SHARED)["Deletion-Receipt"]
    assert send(ports, "GET", f"{SHARED}/deletions/{receipt_id}")["erased"]["dynamodb"]["agent_scopes"] == 0
