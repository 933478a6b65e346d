"""The pure scoring of `bench/bench_memory_coverage.py`: normalisation, coverage, LoCoMo lines, EMF calls."""

import json
import math

import pytest

from bench.bench_memory_coverage import (
    Question,
    backfill_line,
    content_words,
    coverage,
    covered,
    emf_llm_calls,
    per_100_turns,
    ratio,
    sample_of,
    stem,
    turn_text,
)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("7 May 2023", ["7", "may", "2023"]),
        ("May 7th, 2023", ["may", "7", "2023"]),
        ("on 2023-05-07", ["7", "may", "2023"]),
        ("07 Aug. 2023", ["7", "august", "2023"]),
        ("The weekend after 3 March 2024", ["weekend", "3", "march", "2024"]),
        ("Tomas\u2019s sketches!", ["toma", "sketch"]),
        ("Tomas's son", ["toma", "son"]),
        ("Three", ["3"]),
        ("Café", ["caf"]),  # folded to cafe, then stemmed as any word
        ("the and of it", []),
    ],
)
def test_content_words(text: str, words: list[str]) -> None:
    assert content_words(text) == words


@pytest.mark.parametrize(
    ("variants", "stemmed"),
    [
        (("paint", "paints", "painted", "painting"), "paint"),
        (("hike", "hiked", "hiking", "hikes"), "hik"),
        (("run", "running", "runs"), "run"),
        (("story", "stories"), "stori"),
        (("movie", "movies"), "movi"),
        (("class", "classes"), "class"),
        (("fall", "falling"), "fall"),
    ],
)
def test_stem_maps_variants_together(variants: tuple[str, ...], stemmed: str) -> None:
    assert {stem(word) for word in variants} == {stemmed}


def test_stem_leaves_digits_months_and_short_words() -> None:
    assert [stem(w) for w in ("2023", "june", "bus", "is")] == ["2023", "june", "bus", "is"]


def test_content_words_are_distinct_and_in_order() -> None:
    assert content_words("Pottery, painting, camping; paints again") == ["potteri", "paint", "camp", "again"]


def test_covered_needs_80_percent_of_the_words() -> None:
    text = set(content_words("Rosa went to the pottery workshop on 7 May 2023."))
    assert covered(content_words("7 May 2023"), text)
    assert not covered(content_words("8 May 2023"), text)  # 2 of 3: under 80%
    # 4 of 5 is 80%: covered; 3 of 4 (75%) is not.
    assert covered(["a1", "a2", "a3", "a4", "zz"], {"a1", "a2", "a3", "a4"})
    assert not covered(["a1", "a2", "a3", "zz"], {"a1", "a2", "a3"})
    assert covered(["a1", "a2", "a3", "zz"], {"a1", "a2", "a3"}, share=0.75)
    assert not covered(["a1", "zz"], {"a1", "zz"} - {"zz"}, share=1.0)
    assert not covered([], {"a1"})


def test_coverage_is_the_share_of_questions_covered() -> None:
    answers = [["7", "may", "2023"], ["sweden"], ["pottery", "camp"]]
    assert coverage(answers, {"7", "may", "2023", "sweden"}) == pytest.approx(2 / 3)
    assert coverage(answers, set()) == 0.0
    assert math.isnan(coverage([], {"x"}))


def test_ratio_and_growth() -> None:
    assert ratio(0.3, 0.1) == pytest.approx(3.0)
    assert ratio(0.2, 0.0) == math.inf
    assert math.isnan(ratio(0.0, 0.0))
    assert math.isnan(ratio(math.nan, 0.1))
    assert per_100_turns(12, 400) == pytest.approx(3.0)
    assert math.isnan(per_100_turns(1, 0))


def test_turns_and_lines_as_the_jq_one_liner_makes_them() -> None:
    raw = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_10": [{"speaker": "Bob", "dia_id": "D10:1", "text": "Later."}],
            "session_10_date_time": "4:10 pm on 3 March, 2024",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Look!", "blip_caption": "a photo of a cat"},
                {"speaker": "Bob", "dia_id": "D2:2", "text": "Nice."},
            ],
            "session_2_date_time": "1:56 pm on 8 May, 2023",
        },
        "qa": [
            {"question": "When?", "answer": "8 May 2023", "category": 2},
            {"question": "How many?", "answer": 3, "category": 1},
            {"question": "Adversarial", "adversarial_answer": "x", "category": 5},
            {"question": "Nothing left", "answer": "the", "category": 4},
        ],
    }
    sample = sample_of(raw)
    assert [s.number for s in sample.sessions] == [2, 10]  # by number, not as keys sort
    assert sample.sessions[0].turns == [
        {"id": "D2:1", "text": "Ann: Look! [shares a photo of a cat]"},
        {"id": "D2:2", "text": "Bob: Nice."},
    ]
    assert sample.turns == 3
    assert sample.questions == [Question(2, ["8", "may", "2023"]), Question(1, ["3"])]
    assert sample.no_words == 1
    line = backfill_line("conv-x", sample.sessions[1])
    assert line == {
        "user_id": "conv-x",
        "sessions": [
            {"date_time": "4:10 pm on 3 March, 2024", "turns": [{"id": "D10:1", "text": "Bob: Later."}]}
        ],
    }
    # jq's `if .blip_caption` is false for null only: an empty caption still shares.
    assert turn_text({"speaker": "A", "text": "t", "blip_caption": ""}) == "A: t [shares ]"
    assert turn_text({"speaker": "A", "text": "t", "blip_caption": None}) == "A: t"


def test_the_client_reads_the_lines_as_the_cli_does() -> None:
    from hippocampus_client.cli_backfill_lines import parse_line

    raw = {
        "sample_id": "conv-x",
        "conversation": {
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi."}],
            "session_1_date_time": "1:56 pm on 8 May, 2023",
        },
        "qa": [],
    }
    line = parse_line(1, json.dumps(backfill_line("conv-x", sample_of(raw).sessions[0])).encode())
    assert line is not None
    assert line.items == ({"text": "Ann: Hi.", "id": "D1:1", "occurred_at": "2023-05-08T13:56:00+00:00"},)


def test_emf_llm_calls_counts_the_tenant_only() -> None:
    def emf(tenant: str, calls: object) -> str:
        aws = {
            "Timestamp": 1,
            "CloudWatchMetrics": [{"Namespace": "Hippocampus", "Dimensions": [["tenant"]]}],
        }
        return json.dumps({"_aws": aws, "tenant": tenant, "TenantLlmCalls": calls, "TenantPromptTokens": 9})

    lines = [
        emf("t1", 1),
        emf("t1", [2.0]),
        emf("t2", 5),
        '{"level": "INFO", "message": "memory condensed", "llm_calls": 1}',
        '127.0.0.1 "GET /v1/tenants/t1/jobs/j" 200 12 1.0ms TenantLlmCalls {not json',
        "",
    ]
    assert emf_llm_calls(lines, "t1") == 3
    assert emf_llm_calls(lines, "t3") == 0
