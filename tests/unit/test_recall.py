"""Recall on the in-memory fakes: episodes, lists, query and context, as a caller sees them
(docs/api.md "Recall")."""

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
    assert query(ports, "which payment provider?")["results"][0]["type"] in {"fact", "episode"}
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
        "model": "offline-hashed-v1",
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
    assert {r["id"] for r in query(ports, "Stripe")["results"]} <= {"pay", "t1", "t2", "pet", "ship"}
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
    assert ports.indexer().index_user(T, U) == 5  # 3 facts, 2 episodes
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


def test_indexing_stops_between_calls_when_the_invocation_runs_short(ports):
    from hippocampus.domain.recall.indexing import IndexingCut

    ingest(ports, *({"id": f"f{n}", "text": f"Fact {n}.", "infer": False} for n in range(3)))
    with pytest.raises(IndexingCut):
        ports.indexer().index_user(T, U, remaining_ms=lambda: 1_000)
    assert ports.indexer().index_user(T, U, remaining_ms=lambda: 60_000) == 3  # the next pass resumes
