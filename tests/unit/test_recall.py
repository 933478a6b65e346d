"""Recall on the in-memory fakes: episodes, lists, query and context, as a caller sees them
(docs/api.md "Recall")."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from hippocampus.adapters.dynamodb_table import EPISODE_PREFIX, FACT_PREFIX, MEMORY_SK
from hippocampus.adapters.llm.offline import OfflineModel
from hippocampus.contracts.prompt_format import count_words
from tests.support.fakes import Ports, ScriptedModel

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


@pytest.fixture
def ports() -> Ports:
    return Ports()


def ingest(ports: Ports, *items: dict[str, Any], user: str = U, tenant: str = T) -> list[dict[str, Any]]:
    status, _, body = ports.call("POST", f"/v1/tenants/{tenant}/users/{user}/memory", {"items": list(items)})
    assert status == 202, body
    jobs: list[dict[str, Any]] = body["jobs"]
    return jobs


def condense(ports: Ports, model: Any = None) -> None:
    """Every queued turn condensed, then the users indexed, as the condenser's batch does."""
    outcome = ports.consolidation(model or OfflineModel()).process_batch(ports.queued())
    assert outcome.failures == {}
    for user, generation in outcome.condensed.items():
        ports.indexer().index_user(*user, generation=generation)
    ports.queue.messages.clear()


def query(ports: Ports, text: str, user: str = U, tenant: str = T, **options: Any) -> dict[str, Any]:
    path = f"/v1/tenants/{tenant}/users/{user}/memory/query"
    status, _, body = ports.call("POST", path, {"query": text, **options})
    assert status == 200, body
    result: dict[str, Any] = body
    return result


def records(ports: Ports, user: str = U) -> list[dict[str, Any]]:
    """The user's current records (GET …/memory/records)."""
    status, _, body = ports.call(
        "GET", f"/v1/tenants/{T}/users/{user}/memory/records", query={"limit": "100"}
    )
    assert status == 200, body
    items: list[dict[str, Any]] = body["items"]
    return items


def seed(ports: Ports) -> None:
    ingest(
        ports,
        {"id": "pay", "text": "Pays every supplier through Stripe invoices.", "infer": False},
        {"id": "pet", "text": "Has a golden retriever called Biscuit.", "infer": False},
        {
            "id": "ship",
            "text": "Ships candles to Canada and Mexico.",
            "infer": False,
            "metadata": {"topic": "orders"},
        },
    )
    ingest(
        ports,
        {
            "id": "t1",
            "user_assistant_pairs": [{"user": "We are moving our payments to Adyen.", "assistant": "Noted."}],
        },
        {"id": "t2", "text": "The shop opens a second store in Lyon.", "metadata": {"channel": "web"}},
    )
    condense(ports)


def test_the_episode_sort_keys_stay_out_of_a_memory_read():
    assert EPISODE_PREFIX < FACT_PREFIX < MEMORY_SK  # a read is one Query from FACT# on


def test_condensed_turns_are_listed_as_episodes_newest_first_with_their_rendered_text(ports):
    ingest(ports, {"id": "t1", "user_assistant_pairs": [{"user": "I sell candles.", "assistant": "Nice!"}]})
    ingest(ports, {"id": "t2", "text": "# Plans\n**Lyon** next year.", "title": "plans", "is_markdown": True})
    condense(ports, ScriptedModel("Nothing.", "Alice sells candles."))
    status, _, body = ports.call("GET", MEMORY + "/episodes")
    assert status == 200 and [e["id"] for e in body["episodes"]] == ["t2", "t1"]
    newest, oldest = body["episodes"]
    assert oldest["text"] == "User: I sell candles.\nAssistant: Nice!"
    assert (
        newest["text"] == "# Plans\n**Lyon** next year."
        and newest["title"] == "plans"
        and newest["is_markdown"]
    )
    assert body["next_cursor"] is None


def test_lists_come_in_pages_that_never_repeat_an_entry(ports):
    for index in range(5):
        ingest(ports, {"id": f"f{index}", "text": f"Fact {index}.", "infer": False})
        ingest(ports, {"id": f"t{index}", "text": f"Turn {index}."})
    condense(ports)
    for path, key in (("/facts", "facts"), ("/episodes", "episodes")):
        seen: list[str] = []
        cursor = None
        while True:
            params = {"limit": "2", "cursor": cursor} if cursor else {"limit": "2"}
            status, _, body = ports.call("GET", MEMORY + path, query=params)
            assert status == 200 and len(body[key]) <= 2
            seen += [entry["id"] for entry in body[key]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert len(seen) == len(set(seen)) == 5, (path, seen)


def test_the_exact_word_and_a_word_variant_find_the_right_item_first(ports):
    seed(ports)
    assert query(ports, "Stripe")["results"][0]["id"] == "pay"
    assert query(ports, "which payment provider?")["results"][0]["type"] in {"fact", "episode", "record"}
    top = query(ports, "paying suppliers")["results"][0]
    assert top["id"] == "pay" and 0 < top["score"] <= 1
    assert query(ports, "stores in Lyon", types=["episode"])["results"][0]["id"] == "t2"


def test_filters_apply_before_ranking_and_types_restrict_the_results(ports):
    seed(ports)
    results = query(ports, "candles stores payments", metadata_filters={"topic": ["orders", "billing"]})[
        "results"
    ]
    assert [r["id"] for r in results] == ["ship"]
    assert query(ports, "Lyon", metadata_filters={"channel": "email"})["results"] == []
    assert {r["type"] for r in query(ports, "payments Stripe Adyen", types=["fact"])["results"]} == {"fact"}


def test_a_query_answers_the_memory_its_version_and_how_it_ranked(ports):
    seed(ports)
    body = query(ports, "Stripe")
    assert body["version"] == 1 and body["memory"]
    assert body["retrieval"] == {
        "embedding_provider": "offline",
        "model": "wordllama-l2-supercat",
        "lexical_only": False,
    }
    assert query(ports, "Stripe", include_memory=False)["memory"] is None
    ranked = [r["score"] for r in body["results"]]
    assert ranked == sorted(ranked, reverse=True)


def test_without_an_embedding_model_the_ranking_is_lexical_only(ports):
    ports.embedder = None
    seed(ports)
    body = query(ports, "Stripe invoices")
    assert body["retrieval"]["lexical_only"] and body["results"][0]["id"] == "pay"


def test_nothing_crosses_users_or_tenants(ports):
    seed(ports)
    ingest(ports, {"id": "bob", "text": "Bob pays with Stripe too.", "infer": False}, user="bob")
    ingest(ports, {"id": "other", "text": "Stripe, in another tenant.", "infer": False}, tenant="globex")
    own = {"pay", "t1", "t2", "pet", "ship", *(r["id"] for r in records(ports))}
    assert {r["id"] for r in query(ports, "Stripe")["results"]} <= own
    assert [r["id"] for r in query(ports, "Stripe", user="bob")["results"]] == ["bob"]
    assert [r["id"] for r in query(ports, "Stripe", tenant="globex")["results"]] == [
        "other"
    ]  # the same user id in another tenant is another user


def test_a_deleted_fact_or_user_is_never_returned_again_and_a_replaced_fact_shows_its_new_text(ports):
    seed(ports)
    assert ports.call("DELETE", MEMORY + "/facts/pet")[0] == 204
    assert "pet" not in {r["id"] for r in query(ports, "golden retriever Biscuit")["results"]}
    ingest(ports, {"id": "pay", "text": "Pays suppliers by bank transfer now.", "infer": False})
    texts = [r["text"] for r in query(ports, "pays suppliers")["results"] if r["id"] == "pay"]
    assert texts == ["Pays suppliers by bank transfer now."]
    assert ports.call("DELETE", MEMORY)[0] == 204
    assert query(ports, "Stripe Adyen Lyon candles")["results"] == []
    assert ports.call("GET", MEMORY + "/episodes")[2]["episodes"] == []


def test_the_context_block_puts_the_summary_first_and_never_passes_max_words(ports):
    seed(ports)
    for max_words in (1, 5, 12, 30, 300):
        status, _, body = ports.call(
            "POST", MEMORY + "/context", {"query": "payments", "max_words": max_words}
        )
        assert status == 200 and body["word_count"] == count_words(body["context"]) <= max_words
        assert body["sources"][0] == {"type": "memory", "id": None} and body["memory_version"] == 1
    body = ports.call("POST", MEMORY + "/context", {"query": "Stripe supplier invoices", "max_words": 300})[2]
    assert {"type": "fact", "id": "pay"} in body["sources"]


def test_without_a_query_the_context_is_the_summary_and_the_newest_facts(ports):
    seed(ports)
    body = ports.call("POST", MEMORY + "/context", {})[2]
    facts = [source["id"] for source in body["sources"] if source["type"] == "fact"]
    assert set(facts) == {"pay", "pet", "ship"} and all(s["type"] != "episode" for s in body["sources"])


def test_ingest_asks_for_the_vectors_of_new_facts_and_the_indexer_gives_them(ports):
    ingest(ports, {"id": "pay", "text": "Pays through Stripe.", "infer": False})
    assert ports.queue.index_requests == [(T, U)]
    assert ports.indexer().index_user(T, U) == 1
    assert ports.indexer().index_user(T, U) == 0  # nothing left without a vector of this model
    ingest(ports, {"id": "t1", "text": "A turn."})
    assert ports.queue.index_requests == [(T, U)]  # turns are indexed after their condensation


def test_vectors_of_another_model_are_ignored_until_reindexed(ports):
    seed(ports)
    from hippocampus.adapters.embeddings.offline import OfflineEmbedder

    ports.embedder = OfflineEmbedder(dimensions=128)  # another size: another model
    assert query(ports, "Stripe invoices")["retrieval"]["lexical_only"]
    # 3 facts, 2 episodes, and the records the condensation added.
    assert ports.indexer().index_user(T, U) == 5 + len(records(ports))
    assert not query(ports, "Stripe invoices")["retrieval"]["lexical_only"]


def test_the_newest_episodes_are_kept_and_a_user_under_the_cap_is_never_trimmed(ports):
    trims: list[int] = []
    trim = ports.store.trim_episodes
    ports.store.trim_episodes = lambda *args: trims.append(1) or trim(*args)  # type: ignore[method-assign]
    for index in range(5):
        ingest(ports, {"id": f"t{index}", "text": f"Turn {index}."})
        items = ports.queued()
        assert ports.consolidation(OfflineModel(), max_episodes=3).process_batch(items).failures == {}
        ports.queue.messages.clear()
    listed = [e["id"] for e in ports.call("GET", MEMORY + "/episodes")[2]["episodes"]]
    assert listed == ["t4", "t3", "t2"] and len(trims) == 2  # only when the 4th and 5th passed the cap


class DownEmbedder:
    provider, model, dimensions = "openai", "text-embedding-3-small", 256

    def embed(self, texts: Any) -> list[list[float]]:
        raise TimeoutError("the provider is down")


def test_a_query_is_ranked_by_words_when_the_embedding_provider_is_down(ports):
    seed(ports)
    ports.embedder = DownEmbedder()  # type: ignore[assignment]
    body = query(ports, "Stripe invoices")
    assert body["retrieval"]["lexical_only"] and body["results"][0]["id"] == "pay"
    status, _, context = ports.call("POST", MEMORY + "/context", {"query": "Stripe"})
    assert status == 200 and {"type": "fact", "id": "pay"} in context["sources"]


def test_a_re_index_of_every_episode_marks_the_copies_of_the_episodes_stale(ports):
    from hippocampus.adapters.embeddings.offline import OfflineEmbedder
    from hippocampus.domain.recall.indexing import ALL_EPISODES

    seed(ports)
    revision = ports.store.read_memory(T, U, with_facts=False)[0].episodes_revision
    ports.indexer().index_user(T, U)  # the newest episodes: a copy reads them again anyway
    assert ports.store.read_memory(T, U, with_facts=False)[0].episodes_revision == revision
    ports.embedder = OfflineEmbedder(dimensions=128)  # another model: every episode gets a vector
    ports.indexer().index_user(T, U, ALL_EPISODES)
    assert ports.store.read_memory(T, U, with_facts=False)[0].episodes_revision == revision + 1
    # Every pass ends by keeping the stored copy of the user's episodes up to date.
    assert ports.store.copies_kept[-1] == (T, U, "wordllama-l2-supercat@128")


def test_a_re_index_stopped_short_still_marks_the_copies_of_the_episodes_stale(ports):
    from hippocampus.adapters.embeddings.offline import OfflineEmbedder
    from hippocampus.domain.recall.indexing import ALL_EPISODES, EMBED_BATCH, IndexingCut

    ingest(ports, *({"id": f"t{n}", "text": f"Turn {n} about candles."} for n in range(EMBED_BATCH + 5)))
    condense(ports)
    revision = ports.store.read_memory(T, U, with_facts=False)[0].episodes_revision
    ports.embedder = OfflineEmbedder(dimensions=128)  # another model: every episode is due
    calls = iter([60_000, 1_000])  # time for one embedding call only
    with pytest.raises(IndexingCut):
        ports.indexer().index_user(T, U, ALL_EPISODES, remaining_ms=lambda: next(calls))
    assert ports.store.read_memory(T, U, with_facts=False)[0].episodes_revision == revision + 1


def test_indexing_stops_between_calls_when_the_invocation_runs_short(ports):
    from hippocampus.domain.recall.indexing import IndexingCut

    ingest(ports, *({"id": f"f{n}", "text": f"Fact {n}.", "infer": False} for n in range(3)))
    with pytest.raises(IndexingCut):
        ports.indexer().index_user(T, U, remaining_ms=lambda: 1_000)
    assert ports.indexer().index_user(T, U, remaining_ms=lambda: 60_000) == 3  # the next pass resumes


# --- records: ranked with the facts and episodes (docs/api.md "Query", "Context") ---------------


def answer(summary: str, *operations: dict[str, Any]) -> str:
    """A structured condensation answer (contracts/records.py ANSWER_SCHEMA)."""
    keys = ("op", "record_id", "text", "category", "valid_from", "source_items")
    return json.dumps({"summary": summary, "operations": [{k: op.get(k) for k in keys} for op in operations]})


def add(text: str, category: str, *sources: str) -> dict[str, Any]:
    return {"op": "add", "text": text, "category": category, "source_items": list(sources)}


def move_to_berlin(ports: Ports) -> dict[str, str]:
    """Alice lived in Paris and drinks green tea (told on 8 May 2023), then moved to Berlin (told on
    1 March 2024): the Paris record is invalidated. Returns the records' ids by city or drink."""
    ingest(
        ports,
        {
            "id": "t1",
            "text": "I live in Paris. Green tea every morning!",
            "occurred_at": "2023-05-08T10:00:00Z",
        },
    )
    first = answer(
        "Alice makes candles.",
        add("Alice lives in Paris.", "location", "t1"),
        add("Alice drinks green tea every morning.", "preference", "t1"),
    )
    condense(ports, ScriptedModel(first))
    paris = next(r["id"] for r in records(ports) if "Paris" in r["text"])
    ingest(
        ports, {"id": "t2", "text": "We moved to Berlin last week.", "occurred_at": "2024-03-01T10:00:00Z"}
    )
    moved = {"op": "invalidate", "record_id": paris, "text": "Alice lives in Berlin.", "source_items": ["t2"]}
    condense(ports, ScriptedModel(answer("Alice makes candles.", moved)))
    ids = {"paris": paris}
    for item in records(ports):
        ids["berlin" if "Berlin" in item["text"] else "tea"] = item["id"]
    return ids


def test_a_query_finds_a_record_and_types_select_or_exclude_records(ports):
    ids = move_to_berlin(ports)
    ingest(ports, {"id": "city", "text": "Alice's favourite city is Lisbon.", "infer": False})
    results = query(ports, "where does Alice live?")["results"]
    berlin = next(r for r in results if r["id"] == ids["berlin"])
    assert berlin["type"] == "record" and berlin["text"] == "Alice lives in Berlin."
    assert berlin["category"] == "location" and berlin["valid_to"] is None
    assert berlin["metadata"] == {} and berlin["additional_metadata"] == {} and berlin["title"] is None
    listed = next(r for r in records(ports) if r["id"] == ids["berlin"])
    valid_from = datetime.fromisoformat(berlin["valid_from"])
    assert valid_from == datetime.fromisoformat(listed["valid_from"]) == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert datetime.fromisoformat(berlin["occurred_at"]) == valid_from
    recorded = datetime.fromisoformat(listed["recorded_at"])
    assert (
        datetime.fromisoformat(berlin["created_at"])
        == datetime.fromisoformat(berlin["updated_at"])
        == recorded
    )
    only_records = query(ports, "where does Alice live?", types=["record"])["results"]
    assert only_records[0]["id"] == ids["berlin"] and {r["type"] for r in only_records} == {"record"}
    facts = query(ports, "where does Alice live?", types=["fact"])["results"]
    assert [r["id"] for r in facts] == ["city"]
    # A fact's answer keeps its shape: the record fields are null.
    assert (facts[0]["category"], facts[0]["valid_from"], facts[0]["valid_to"]) == (None, None, None)


def test_an_invalidated_record_is_never_returned(ports):
    ids = move_to_berlin(ports)
    found = query(ports, "Alice lives in Paris", types=["record"], top_k=50)["results"]
    assert ids["paris"] not in {r["id"] for r in found} and found[0]["id"] == ids["berlin"]
    body = ports.call("POST", MEMORY + "/context", {"query": "Alice lives in Paris"})[2]
    assert {"type": "record", "id": ids["paris"]} not in body["sources"]
    assert "Alice lives in Paris." not in body["context"]


def test_the_context_block_dates_each_record_and_never_passes_max_words(ports):
    ids = move_to_berlin(ports)
    body = ports.call("POST", MEMORY + "/context", {"query": "where does Alice live? which tea?"})[2]
    assert "Relevant records:\n" in body["context"]
    assert "- Alice lives in Berlin. (since 1 March 2024)" in body["context"]
    assert "- Alice drinks green tea every morning. (since 8 May 2023)" in body["context"]
    assert {"type": "record", "id": ids["berlin"]} in body["sources"]
    for max_words in range(1, 40):
        status, _, small = ports.call(
            "POST", MEMORY + "/context", {"query": "where does Alice live?", "max_words": max_words}
        )
        assert status == 200 and small["word_count"] == count_words(small["context"]) <= max_words
        if {"type": "record", "id": ids["berlin"]} in small["sources"]:  # whole, with its date
            assert "- Alice lives in Berlin. (since 1 March 2024)" in small["context"]


def test_without_a_query_the_context_lists_the_current_records_newest_first_after_the_facts(ports):
    ids = move_to_berlin(ports)
    ingest(ports, {"id": "pay", "text": "Pays suppliers through Stripe.", "infer": False})
    body = ports.call("POST", MEMORY + "/context", {})[2]
    assert [(s["type"], s["id"]) for s in body["sources"]] == [
        ("memory", None),
        ("fact", "pay"),
        ("record", ids["berlin"]),
        ("record", ids["tea"]),
    ]
    assert body["context"].index("Relevant facts:") < body["context"].index("Relevant records:")
    # Past the budget, the facts come first, then the newest records: 9 + 7 + 2 + 9 words.
    tight = ports.call("POST", MEMORY + "/context", {"max_words": 27})[2]
    assert tight["sources"][1:] == [{"type": "fact", "id": "pay"}, {"type": "record", "id": ids["berlin"]}]
    assert tight["word_count"] == 27


def test_recency_counts_from_when_a_record_became_true_and_filters_leave_records_out(ports):
    ids = move_to_berlin(ports)
    newest = query(ports, "Alice", types=["record"], recency_bias=1.0)["results"]
    assert [r["id"] for r in newest] == [ids["berlin"], ids["tea"]]  # 2024 before 2023
    filtered = query(ports, "Alice lives Berlin", metadata_filters={"channel": "web"})["results"]
    assert all(r["type"] != "record" for r in filtered)


def test_the_indexer_gives_current_records_a_vector(ports):
    ids = move_to_berlin(ports)
    vectors = ports.store.vectors[(T, U)]
    assert {f"record:{ids['berlin']}", f"record:{ids['tea']}"} <= set(vectors)
    assert ports.indexer().index_user(T, U) == 0  # nothing left without one
    body = query(ports, "where does Alice live?", types=["record"])
    assert not body["retrieval"]["lexical_only"] and body["results"][0]["id"] == ids["berlin"]


def test_types_names_each_kind_at_most_three_times_and_defaults_to_all(ports):
    status, _, body = ports.call(
        "POST", MEMORY + "/query", {"query": "x", "types": ["fact", "episode", "record", "fact"]}
    )
    assert status == 422 and body["error"]["details"][0]["field"] == "types"
    status, _, body = ports.call("POST", MEMORY + "/query", {"query": "x", "types": ["note"]})
    assert status == 422


def test_a_question_naming_a_month_finds_the_turns_of_that_month_by_their_date(ports: Ports) -> None:
    ingest(
        ports,
        {"id": "may", "text": "We repainted the kitchen.", "occurred_at": "2023-05-08T10:00:00Z"},
        {"id": "june", "text": "We repainted the garage.", "occurred_at": "2023-06-20T10:00:00Z"},
    )
    condense(ports)
    results = query(ports, "What did we repaint in May?", types=["episode"])["results"]
    assert results[0]["id"] == "may"
    # The date is searched, never shown: the episode's text is as it was sent.
    assert results[0]["text"] == "We repainted the kitchen."
