"""Records: one structured answer per burst adds and invalidates them, in the memory's transaction;
they are never overwritten, are listed as of a time, and forgetting one episode removes what it
alone taught (docs/api.md "Records", "Forget one episode"; docs/architecture.md "Records")."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hippocampus.contracts.models import IngestRequest
from hippocampus.contracts.records import MemoryRecord, RecordOperation
from hippocampus.domain.condense.condenser import Condenser
from hippocampus.domain.condense.record_ops import Burst, SourceItem, apply_operations
from tests.support.fakes import Ports, ScriptedModel

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def answer(summary: str, *operations: dict[str, Any]) -> str:
    keys = ("op", "record_id", "text", "category", "valid_from", "source_items")
    return json.dumps(
        {"summary": summary, "operations": [{k: op.get(k) for k in keys} | op for op in operations]}
    )


def add(text: str, category: str, *sources: str, valid_from: str | None = None) -> dict[str, Any]:
    return {
        "op": "add",
        "text": text,
        "category": category,
        "source_items": list(sources),
        "valid_from": valid_from,
    }


def record(record_id: str, text: str, category: str, since: datetime, **extra: Any) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        text=text,
        category=category,
        valid_from=since,
        recorded_at=since,
        episode_ids=["t0"],
        **extra,
    )


@pytest.fixture
def ports() -> Ports:
    return Ports()


def ingest(ports: Ports, *items: dict[str, Any]) -> list[Any]:
    request = IngestRequest.model_validate({"items": list(items)})
    return ports.ingest().ingest(T, U, request, f"r{len(ports.archive.raw)}").jobs


def condense(ports: Ports, *answers: str, reply: Any = None) -> ScriptedModel:
    model = ScriptedModel(*answers, reply=reply)
    ports.consolidation(model).process_batch(ports.queued())
    ports.queue.messages.clear()
    return model


def get(ports: Ports, path: str) -> tuple[int, Any]:
    """GET with a query string written as a client writes it (`?a=1&b=2`)."""
    from urllib.parse import parse_qsl

    path, _, query = path.partition("?")
    status, _, body = ports.call("GET", path, query=dict(parse_qsl(query)))
    return status, body


def records(ports: Ports, query: str = "") -> list[dict[str, Any]]:
    status, body = get(ports, f"{MEMORY}/records{query}")
    assert status == 200, body
    return body["items"]


def move_to_berlin(ports: Ports) -> None:
    """Alice lived in Paris (said in t1, 2023) and moved to Berlin (said in t2, 2024)."""
    ingest(ports, {"id": "t1", "text": "I live in Paris.", "occurred_at": "2023-05-08T10:00:00Z"})
    condense(ports, answer("Alice lives in Paris.", add("Alice lives in Paris.", "location", "t1")))
    [paris] = records(ports)
    ingest(ports, {"id": "t2", "text": "I moved to Berlin.", "occurred_at": "2024-03-01T10:00:00Z"})
    move = {
        "op": "invalidate",
        "record_id": paris["id"],
        "text": "Alice lives in Berlin.",
        "source_items": ["t2"],
    }
    condense(ports, answer("Alice lives in Berlin.", move))


# --- the operations of one answer --------------------------------------------------------------


def burst(*current: MemoryRecord, sources: tuple[str, ...] = ("t1",)) -> Burst:
    items = [SourceItem(item_id, NOW - timedelta(days=1), f"job-{item_id}") for item_id in sources]
    return Burst(list(current), items, NOW, max_writes=50)


def op(**fields: Any) -> RecordOperation:
    return RecordOperation.model_validate(fields)


def test_a_newer_statement_supersedes_only_the_record_it_names():
    paris = record("rec_1", "Alice lives in Paris.", "location", NOW - timedelta(days=30))
    hiking = record("rec_2", "Alice likes hiking.", "preference", NOW - timedelta(days=30))
    changes = apply_operations(
        [op(op="invalidate", record_id="rec_1", text="Alice moved to Berlin.", source_items=["t1"])],
        burst(paris, hiking),
    )
    by_id = {write.record.id: write.record for write in changes.writes}
    berlin = next(r for r in by_id.values() if r.text == "Alice moved to Berlin.")
    old = by_id["rec_1"]
    assert (old.text, old.superseded_by, old.valid_to) == (
        "Alice lives in Paris.",
        berlin.id,
        berlin.valid_from,
    )
    assert old.invalidated_at == NOW and berlin.is_current and berlin.category == "location"
    assert "rec_2" not in by_id  # an unrelated record of any category is left as it is
    assert (changes.applied, changes.dropped) == (1, 0)


def test_invalid_operations_are_dropped_whole_and_counted():
    paris = record("rec_1", "Alice lives in Paris.", "location", NOW - timedelta(days=30))
    operations = [
        op(op="invalidate", record_id="rec_404", text="Alice moved."),  # unknown id
        op(op="add", text="x" * 501, category="event"),  # over 500 characters
        op(op="add", text="Alice owns a cat.", category="pets"),  # unknown category
        op(op="add", text="Alice lives in Paris.", category="location"),  # repeats a current record
        op(op="add", text="  ", category="event"),
        op(op="add", text="Alice owns a cat.", category="possession", source_items=["t1"]),
    ]
    changes = apply_operations(operations, burst(paris))
    assert [write.record.text for write in changes.writes] == ["Alice owns a cat."]
    assert (changes.applied, changes.dropped) == (1, 5)


def test_more_than_forty_operations_and_what_does_not_fit_the_transaction_are_dropped():
    operations = [op(op="add", text=f"Alice visited city {n}.", category="event") for n in range(45)]
    assert apply_operations(operations, Burst([], [SourceItem("t1", NOW, "j")], NOW, 100)).dropped == 5
    tight = Burst([], [SourceItem("t1", NOW, "job-t1")], NOW, max_writes=3)
    changes = apply_operations(operations[:5], tight)
    assert (len(changes.writes), changes.dropped) == (3, 2)


def test_an_older_statement_arriving_later_is_kept_as_already_superseded():
    """A backfill: 'lives in Paris' (2023) arrives after 'lives in Berlin' (2024) was recorded."""
    berlin = record("rec_9", "Alice lives in Berlin.", "location", datetime(2024, 3, 1, tzinfo=UTC))
    changes = apply_operations(
        [op(op="invalidate", record_id="rec_9", text="Alice lives in Paris.", valid_from="2023-05-08")],
        burst(berlin),
    )
    [write] = changes.writes
    assert write.record.text == "Alice lives in Paris." and write.record.superseded_by == "rec_9"
    assert write.record.valid_from == datetime(2023, 5, 8, tzinfo=UTC)
    assert write.record.valid_to == berlin.valid_from  # berlin stays current, untouched


def test_an_answer_ends_a_record_it_adds_itself_by_its_number():
    """A backfill's burst: "I live in Paris" (2023) then "I moved to Berlin" (2024) in one answer."""
    items = Burst(
        [], [SourceItem("t1", datetime(2023, 5, 8, tzinfo=UTC), "j1"), SourceItem("t2", NOW, "j2")], NOW, 50
    )
    changes = apply_operations(
        [
            op(op="add", text="Alice lives in Paris.", category="location", source_items=["t1"]),
            op(op="invalidate", record_id="new:1", text="Alice lives in Berlin.", source_items=["t2"]),
            op(op="invalidate", record_id="new:7", text="Alice lives in Rome."),  # names nothing
        ],
        items,
    )
    paris, berlin = (write.record for write in changes.writes)
    assert (paris.text, paris.superseded_by, paris.valid_to) == ("Alice lives in Paris.", berlin.id, NOW)
    assert berlin.is_current and all(write.is_new for write in changes.writes)
    assert (changes.applied, changes.dropped) == (2, 1)


def test_validity_defaults_to_the_date_of_the_item_it_came_from_and_sources_name_episodes():
    items = Burst(
        [], [SourceItem("t1", datetime(2023, 5, 8, tzinfo=UTC), "j1"), SourceItem("t2", NOW, "j2")], NOW, 50
    )
    cited, uncited, future = apply_operations(
        [
            op(op="add", text="Alice adopted a dog.", category="event", source_items=["t1"]),
            op(op="add", text="Alice plays chess.", category="preference", source_items=["nope"]),
            op(op="add", text="Alice runs.", category="preference", valid_from="2999-01-01"),
        ],
        items,
    ).writes
    [ancient] = apply_operations(
        [op(op="add", text="Alice swims.", category="preference", valid_from="0001-01-01T00:00:00+01:00")],
        items,
    ).writes
    assert ancient.record.valid_from == datetime(2023, 5, 8, tzinfo=UTC)  # the item's date instead
    assert (cited.record.valid_from, cited.record.episode_ids) == (datetime(2023, 5, 8, tzinfo=UTC), ["t1"])
    assert uncited.record.episode_ids == ["t1", "t2"]  # cites none of the burst's: all of them
    assert future.record.valid_from == datetime(2023, 5, 8, tzinfo=UTC)  # never after now


# --- the structured answer ------------------------------------------------------------------------


def test_an_answer_that_breaks_the_schema_is_asked_again_once():
    model = ScriptedModel(
        '{"summary": 3}', answer("Alice sells candles.", add("Alice sells candles.", "work"))
    )
    outcome = Condenser(model, 50).condense(None, [_input()])
    assert model.calls == 2 and "did not match the JSON schema" in model.prompts[1]
    assert (
        outcome.memory == "Alice sells candles." and len(outcome.operations) == 1 and outcome.schema_retried
    )


def test_twice_broken_keeps_the_summary_alone():
    model = ScriptedModel('{"summary": "Alice sells candles.", "operations": [{"op": "explode"}]}')
    outcome = Condenser(model, 50).condense(None, [_input()])
    assert (model.calls, outcome.memory, outcome.operations) == (2, "Alice sells candles.", ())


def test_a_plain_text_answer_is_the_summary_alone_without_a_second_call():
    model = ScriptedModel("Alice sells candles.")
    outcome = Condenser(model, 50).condense(None, [_input()])
    assert (model.calls, outcome.memory, outcome.operations) == (1, "Alice sells candles.", ())


def test_the_prompt_lists_the_current_records_and_each_items_id():
    model = ScriptedModel(answer("Alice lives in Paris."))
    paris = record("rec_1", "Alice lives in Paris.", "location", datetime(2023, 5, 8, tzinfo=UTC))
    Condenser(model, 50).condense(None, [_input()], records=[paris])
    assert "rec_1 | location | since Monday 8 May 2023 | Alice lives in Paris." in model.prompts[0]
    assert "Item id: t1" in model.prompts[0]


def _input() -> Any:
    from hippocampus.domain.condense.prompt import CondenseInput

    return CondenseInput(text="I sell candles.", item_id="t1", occurred_at=NOW)


# --- through the condenser and the API ------------------------------------------------------------


def test_records_are_written_with_the_summary_once_and_a_redelivery_adds_nothing(ports):
    ingest(ports, {"id": "t1", "text": "I live in Paris.", "occurred_at": "2023-05-08T10:00:00Z"})
    queued = ports.queued()
    model = ScriptedModel(answer("Alice lives in Paris.", add("Alice lives in Paris.", "location", "t1")))
    ports.consolidation(model).process_batch(queued)
    ports.consolidation(model).process_batch(queued)  # SQS delivers it again
    [paris] = records(ports)
    assert (paris["text"], paris["episode_ids"], paris["valid_from"]) == (
        "Alice lives in Paris.",
        ["t1"],
        "2023-05-08T10:00:00Z",
    )
    assert model.calls == 1
    status, _, memory = ports.call("GET", MEMORY)
    assert status == 200 and memory["memory"] == "Alice lives in Paris." and "records" not in memory


def test_as_of_and_known_at_answer_what_was_true_and_what_was_known(ports):
    move_to_berlin(ports)
    assert [r["text"] for r in records(ports)] == ["Alice lives in Berlin."]
    assert [r["text"] for r in records(ports, "?include_invalidated=true")] == [
        "Alice lives in Berlin.",
        "Alice lives in Paris.",
    ]
    assert [r["text"] for r in records(ports, "?as_of=2023-12-31T00:00:00Z")] == ["Alice lives in Paris."]
    assert [r["text"] for r in records(ports, "?as_of=2024-06-01T00:00:00%2B02:00")] == [
        "Alice lives in Berlin."
    ]
    learned_berlin = records(ports)[0]["recorded_at"]
    before = (datetime.fromisoformat(learned_berlin) - timedelta(microseconds=1)).isoformat()
    assert [r["text"] for r in records(ports, f"?known_at={before.replace('+', '%2B')}")] == [
        "Alice lives in Paris."
    ]
    old = next(r for r in records(ports, "?include_invalidated=true") if r["text"].endswith("Paris."))
    assert old["superseded_by"] == records(ports)[0]["id"] and old["valid_to"] == "2024-03-01T10:00:00Z"


def test_the_list_pages_newest_first_and_refuses_bad_parameters(ports):
    ingest(ports, {"id": "t1", "text": "Many things."})
    condense(ports, answer("Alice.", *(add(f"Alice visited place {n}.", "event", "t1") for n in range(5))))
    first = get(ports, f"{MEMORY}/records?limit=2")[1]
    second = get(ports, f"{MEMORY}/records?limit=2&cursor={first['next_cursor']}")[1]
    third = get(ports, f"{MEMORY}/records?limit=2&cursor={second['next_cursor']}")[1]
    ids = [r["id"] for page in (first, second, third) for r in page["items"]]
    assert len(ids) == len(set(ids)) == 5 and third["next_cursor"] is None
    for query, field in [
        ("as_of=2023-05-08", "as_of"),
        ("known_at=yesterday", "known_at"),
        ("include_invalidated=1", "include_invalidated"),
        ("limit=0", "limit"),
        ("cursor=bm9wZQ", "cursor"),
    ]:
        status, body = get(ports, f"{MEMORY}/records?{query}")
        assert status == 422 and body["error"]["details"][0]["field"] == field, body


def test_delete_one_record(ports):
    ingest(ports, {"id": "t1", "text": "I own a cat."})
    condense(ports, answer("Alice owns a cat.", add("Alice owns a cat.", "possession", "t1")))
    [cat] = records(ports)
    assert ports.call("DELETE", f"{MEMORY}/records/{cat['id']}")[0] == 204
    assert records(ports) == []
    status, _, body = ports.call("DELETE", f"{MEMORY}/records/{cat['id']}")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_forgetting_the_user_forgets_the_records(ports):
    ingest(ports, {"id": "t1", "text": "I own a cat."})
    condense(ports, answer("Alice owns a cat.", add("Alice owns a cat.", "possession", "t1")))
    assert ports.call("DELETE", MEMORY)[0] == 204
    assert records(ports, "?include_invalidated=true") == []


def test_forgetting_one_episode_removes_what_it_alone_taught_and_rebuilds_the_summary(ports):
    ingest(ports, {"id": "t1", "text": "I live in Paris. I like tea.", "occurred_at": "2023-05-08T10:00:00Z"})
    condense(
        ports,
        answer(
            "Alice lives in Paris and likes tea.",
            add("Alice lives in Paris.", "location", "t1"),
            add("Alice likes tea.", "preference", "t1"),
        ),
    )
    paris = next(r for r in records(ports) if "Paris" in r["text"])
    ingest(
        ports,
        {"id": "t2", "text": "I moved to Berlin. I still like tea.", "occurred_at": "2024-03-01T10:00:00Z"},
    )
    move = {
        "op": "invalidate",
        "record_id": paris["id"],
        "text": "Alice lives in Berlin.",
        "source_items": ["t2"],
    }
    condense(ports, answer("Alice lives in Berlin and likes tea.", move))
    raw_before = ports.raw_payloads()

    status, _, body = ports.call("DELETE", f"{MEMORY}/episodes/t2")
    [job] = body["jobs"]
    assert status == 202 and (job["status"], job["item_id"]) == ("completed", "t2")
    # At once, in one write: the record only t2 taught is gone, the one it had superseded is current
    # again, and the summary is rebuilt from the records left without an LLM call.
    assert sorted(r["text"] for r in records(ports)) == ["Alice likes tea.", "Alice lives in Paris."]
    assert all(r["invalidated_at"] is None for r in records(ports, "?include_invalidated=true"))
    memory = ports.call("GET", MEMORY)[2]
    assert "Berlin" not in memory["memory"] and "Paris" in memory["memory"]
    assert job["memory_version"] == memory["version"] == 3
    assert ports.call("GET", f"/v1/tenants/{T}/jobs/{job['job_id']}")[2]["status"] == "completed"
    episodes = ports.call("GET", f"{MEMORY}/episodes")[2]["episodes"]
    assert [episode["id"] for episode in episodes] == ["t1"]
    assert ports.raw_payloads() == raw_before - 1  # its request held only it
    history = ports.call("GET", f"{MEMORY}/history")[2]["versions"]
    assert [version["version"] for version in history] == [3, 1]  # version 2 condensed t2
    assert all("Berlin" not in (version["memory"] or "") for version in history)
    assert ports.call("DELETE", f"{MEMORY}/episodes/t2")[0] == 404


def test_forgetting_a_statement_that_was_replaced_in_turn_keeps_the_later_one(ports):
    """Paris (t1) → Berlin (t2) → Munich (t3); forgetting t2: Paris until Munich, Munich current."""
    places = [("t1", "Paris", "2023-01-01"), ("t2", "Berlin", "2024-01-01"), ("t3", "Munich", "2025-01-01")]
    for item_id, city, day in places:
        ingest(ports, {"id": item_id, "text": f"I live in {city}.", "occurred_at": f"{day}T00:00:00Z"})
        current = records(ports)
        operation = (
            {
                "op": "invalidate",
                "record_id": current[0]["id"],
                "text": f"Alice lives in {city}.",
                "source_items": [item_id],
            }
            if current
            else add(f"Alice lives in {city}.", "location", item_id)
        )
        condense(ports, answer(f"Alice lives in {city}.", operation))
    assert ports.call("DELETE", f"{MEMORY}/episodes/t2")[0] == 202
    kept = {r["text"]: r for r in records(ports, "?include_invalidated=true")}
    assert set(kept) == {"Alice lives in Paris.", "Alice lives in Munich."}
    munich, paris = kept["Alice lives in Munich."], kept["Alice lives in Paris."]
    assert munich["invalidated_at"] is None
    assert (paris["superseded_by"], paris["valid_to"]) == (munich["id"], "2025-01-01T00:00:00Z")
    assert ports.call("GET", MEMORY)[2]["memory"] == "Alice lives in Munich."


def test_every_copy_of_a_forgotten_turn_in_the_raw_payloads_is_blanked(ports):
    ingest(ports, {"id": "t1", "text": "My bank PIN is 4321."})
    condense(ports, answer("Alice.", add("Alice has a bank PIN.", "other", "t1")))
    # Sent again beside a new turn: the same job, stored again in the later payload.
    ingest(ports, {"id": "t1", "text": "My bank PIN is 4321."}, {"id": "t2", "text": "I like tea."})
    condense(ports, answer("Alice likes tea.", add("Alice likes tea.", "preference", "t2")))
    assert ports.call("DELETE", f"{MEMORY}/episodes/t1")[0] == 202
    # The words, not the digits alone: a time's microseconds or an id may hold "4321" by chance.
    assert "PIN is 4321" not in json.dumps(ports.archive.raw)
    export = ports.call("GET", f"{MEMORY}/export")[2]
    assert "PIN is 4321" not in json.dumps(export) and [item["id"] for item in export["items"]] == ["t2"]


def test_a_record_taught_by_two_episodes_keeps_the_other(ports):
    ingest(ports, {"id": "t1", "text": "I like tea."}, {"id": "t2", "text": "Tea is my favourite."})
    condense(ports, answer("Alice likes tea.", add("Alice likes tea.", "preference", "t1", "t2")))
    assert ports.call("DELETE", f"{MEMORY}/episodes/t1")[0] == 202
    [tea] = records(ports)
    assert tea["episode_ids"] == ["t2"]


def test_a_forget_racing_a_condensation_makes_the_condensation_write_again(ports):
    """A condensation that read the memory before a forget loses its conditional write, then
    condenses on top of the rebuilt summary: what the episode taught never comes back."""
    ingest(ports, {"id": "t1", "text": "My bank PIN is 4321."})
    condense(ports, answer("Alice has a bank PIN, 4321.", add("Alice's bank PIN is 4321.", "other", "t1")))
    ingest(ports, {"id": "t2", "text": "I like tea."})
    ports.store.before_write = lambda: ports.forgetter().forget(T, U, "t1")
    model = condense(
        ports,
        reply=lambda prompt: answer(
            "Alice likes tea." if "4321" not in prompt else "Alice has a bank PIN, 4321, and likes tea.",
            add("Alice likes tea.", "preference", "t2"),
        ),
    )
    assert model.calls == 2 and "4321" not in model.prompts[1]
    memory = ports.call("GET", MEMORY)[2]["memory"]
    assert memory == "Alice likes tea." and [r["text"] for r in records(ports)] == ["Alice likes tea."]


def test_a_record_deleted_during_a_condensation_is_never_brought_back(ports):
    """The answer invalidates a record that a DELETE removed meanwhile: the write loses, the
    condensation reads again and the operation names nothing any more (deletion wins)."""
    ingest(ports, {"id": "t1", "text": "I live in Paris."})
    condense(ports, answer("Alice lives in Paris.", add("Alice lives in Paris.", "location", "t1")))
    [paris] = records(ports)
    ingest(ports, {"id": "t2", "text": "I moved to Berlin."})
    ports.store.before_write = lambda: ports.records().delete_record(T, U, paris["id"])
    move = {
        "op": "invalidate",
        "record_id": paris["id"],
        "text": "Alice lives in Berlin.",
        "source_items": ["t2"],
    }
    model = condense(ports, answer("Alice lives in Berlin.", move))
    assert model.calls == 2  # the first write lost to the delete
    assert records(ports, "?include_invalidated=true") == []
    assert ports.call("GET", MEMORY)[2]["memory"] == "Alice lives in Berlin."


def test_a_time_range_keeps_what_happened_then(ports):
    """Query and context take `time_range` over when things happened: episodes by `occurred_at`,
    records by their validity; facts, which say nothing of when, are left out."""
    ingest(ports, {"id": "pay", "text": "Pays through Stripe.", "infer": False})
    move_to_berlin(ports)

    def found(time_range: dict[str, str], types: list[str] | None = None) -> list[str]:
        body: dict[str, Any] = {
            "query": "Where does Alice live? Paris, moved to Berlin, Stripe",
            "time_range": time_range,
        }
        status, _, answer_body = ports.call(
            "POST", MEMORY + "/query", body | ({"types": types} if types else {})
        )
        assert status == 200, answer_body
        return sorted(result["id"] for result in answer_body["results"])

    in_2023 = {"from": "2023-01-01T00:00:00Z", "to": "2023-12-31T23:59:59Z"}
    assert found(in_2023, ["episode"]) == ["t1"]
    old = next(r for r in records(ports, "?include_invalidated=true") if "Paris" in r["text"])
    assert found(in_2023, ["record"]) == []  # an invalidated record is never ranked
    assert found({"from": "2024-01-01T00:00:00+01:00"}) == sorted(["t2", records(ports)[0]["id"]])
    assert "pay" not in found({"to": "2030-01-01T00:00:00Z"})
    assert old["id"] not in found({"to": "2030-01-01T00:00:00Z"})
    status, _, context = ports.call(
        "POST",
        MEMORY + "/context",
        {"query": "Where did Alice live?", "time_range": in_2023, "max_words": 60},
    )
    assert status == 200 and "Berlin" not in " ".join(source.get("id") or "" for source in context["sources"])
    for bad, field in [
        ({}, "time_range"),
        ({"from": "2024-01-01T00:00:00Z", "to": "2023-01-01T00:00:00Z"}, "time_range"),
        ({"from": "2024-01-01"}, "time_range.from"),
        ({"to": 5}, "time_range.to"),
        ({"since": "2024-01-01T00:00:00Z"}, "time_range.since"),
    ]:
        status, _, error = ports.call("POST", MEMORY + "/query", {"query": "q", "time_range": bad})
        assert status == 422 and error["error"]["details"][0]["field"] == field, (bad, error)


def test_min_score_leaves_out_weak_matches(ports):
    ingest(
        ports,
        {"id": "pay", "text": "Pays suppliers through Stripe.", "infer": False},
        {"id": "bank", "text": "Opened a bank account in Lyon.", "infer": False},  # near in meaning only
        {"id": "dark", "text": "Prefers dark mode.", "infer": False},
    )
    ports.indexer().index_user(T, U)

    def scores(**options: Any) -> dict[str, float]:
        status, _, body = ports.call(
            "POST", MEMORY + "/query", {"query": "Which payment provider, Stripe?", **options}
        )
        assert status == 200, body
        return {result["id"]: result["score"] for result in body["results"]}

    everything = scores()
    assert everything["pay"] > 0.5 and set(everything) == {"pay", "bank"} and everything["bank"] < 0.1
    assert set(scores(min_score=0.1)) == {"pay"}
    status, _, error = ports.call("POST", MEMORY + "/query", {"query": "q", "min_score": 1.5})
    assert status == 422 and error["error"]["details"][0]["field"] == "min_score"
