"""The Comprehend PII detector (MEMORY_PII_DETECTOR=comprehend) against a stubbed botocore client:
the service's answers become spans of the right kind, at the right place in the whole text."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from hippocampus.adapters import aws_clients
from hippocampus.adapters.pii.comprehend import MAX_TEXT_BYTES, MIN_SCORE, ComprehendDetector


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return boto3.session.Session().client("comprehend", region_name="us-east-1")


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def entity(text: str, written: str, kind: str, score: float = 0.99) -> dict[str, Any]:
    begin = text.index(written)
    return {"Type": kind, "Score": score, "BeginOffset": begin, "EndOffset": begin + len(written)}


def answer(stubber: Stubber, text: str, *entities: dict[str, Any], language: str = "en") -> None:
    stubber.add_response(
        "detect_pii_entities", {"Entities": list(entities)}, {"Text": text, "LanguageCode": language}
    )


def found(text: str, detector: ComprehendDetector) -> list[tuple[str, str, str]]:
    return [(span.kind, text[span.start : span.end], span.value) for span in detector.detect(text)]


def test_each_comprehend_type_becomes_its_kind_with_a_canonical_value(client: Any, stubber: Stubber) -> None:
    text = (
        "Jane  Doe, Jane.DOE@Example.com, +1 (415) 555-0132, 4111-1111-1111-1111, "
        "gb82 west 1234 5698 7654 32, 123-45-6789, 10.0.0.1, 100 Main\nStreet, Springfield"
    )
    pieces = [
        ("Jane  Doe", "NAME"),
        ("Jane.DOE@Example.com", "EMAIL"),
        ("+1 (415) 555-0132", "PHONE"),
        ("4111-1111-1111-1111", "CREDIT_DEBIT_NUMBER"),
        ("gb82 west 1234 5698 7654 32", "INTERNATIONAL_BANK_ACCOUNT_NUMBER"),
        ("123-45-6789", "SSN"),
        ("10.0.0.1", "IP_ADDRESS"),
        ("100 Main\nStreet, Springfield", "ADDRESS"),
    ]
    answer(stubber, text, *(entity(text, written, kind) for written, kind in pieces))
    assert found(text, ComprehendDetector(client=client)) == [
        ("NAME", "Jane  Doe", "Jane Doe"),
        ("EMAIL", "Jane.DOE@Example.com", "jane.doe@example.com"),
        ("PHONE", "+1 (415) 555-0132", "14155550132"),
        ("CARD", "4111-1111-1111-1111", "4111111111111111"),
        ("IBAN", "gb82 west 1234 5698 7654 32", "GB82WEST12345698765432"),
        ("SSN", "123-45-6789", "123456789"),
        ("IP", "10.0.0.1", "10.0.0.1"),
        ("ADDRESS", "100 Main\nStreet, Springfield", "100 Main Street, Springfield"),
    ]


def test_unsure_and_unmasked_types_are_dropped(client: Any, stubber: Stubber) -> None:
    text = "Bob Stone met Ann Lee on 2023-05-08 at https://example.com, PIN 4321, key AKIAIOSFODNN7EXAMPLE"
    answer(
        stubber,
        text,
        entity(text, "Bob Stone", "NAME", score=MIN_SCORE),
        entity(text, "Ann Lee", "NAME", score=MIN_SCORE - 0.01),
        entity(text, "2023-05-08", "DATE_TIME"),
        entity(text, "https://example.com", "URL"),
        entity(text, "4321", "PIN"),
        entity(text, "AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY"),
    )
    assert found(text, ComprehendDetector(client=client)) == [("NAME", "Bob Stone", "Bob Stone")]


def test_offsets_count_characters_not_bytes(client: Any, stubber: Stubber) -> None:
    text = "Zoë, café ☕ and 😀 — call José at 415-555-0132 or josé@example.com"
    answer(stubber, text, entity(text, "José", "NAME"), entity(text, "415-555-0132", "PHONE"))
    assert found(text, ComprehendDetector(client=client)) == [
        ("NAME", "José", "José"),
        ("PHONE", "415-555-0132", "4155550132"),
    ]


def test_the_language_is_sent(client: Any, stubber: Stubber) -> None:
    text = "Llame a Juan Pérez"
    answer(stubber, text, entity(text, "Juan Pérez", "NAME"), language="es")
    assert found(text, ComprehendDetector(language="es", client=client)) == [
        ("NAME", "Juan Pérez", "Juan Pérez")
    ]


def test_a_text_over_the_size_limit_is_sent_in_chunks_and_offsets_point_into_the_whole_text(
    client: Any, stubber: Stubber
) -> None:
    first = "Call 415-555-0132 " + "x" * (MAX_TEXT_BYTES - 19) + " "  # exactly the limit, ending with a space
    second = "Ann Lee " + "y" * (MAX_TEXT_BYTES - 9) + " "
    third = "mail bob@example.com"
    text = first + second + third
    answer(stubber, first, entity(first, "415-555-0132", "PHONE"))
    answer(stubber, second, entity(second, "Ann Lee", "NAME"))
    answer(stubber, third, entity(third, "bob@example.com", "EMAIL"))
    spans = ComprehendDetector(client=client).detect(text)
    assert [(span.kind, text[span.start : span.end]) for span in spans] == [
        ("PHONE", "415-555-0132"),
        ("NAME", "Ann Lee"),
        ("EMAIL", "bob@example.com"),
    ]
    assert [span.start for span in spans] == [5, len(first), len(first + second) + 5]


class Recording:
    """Delegates to the stubbed client, keeping the texts sent."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.texts: list[str] = []

    def detect_pii_entities(self, **params: Any) -> Any:
        self.texts.append(params["Text"])
        return self.client.detect_pii_entities(**params)


def test_chunks_are_cut_at_whitespace_under_the_limit_in_utf8_bytes(client: Any, stubber: Stubber) -> None:
    text = "éééé " * 30_000  # 150,000 characters but 270,000 bytes
    for _ in range(3):
        stubber.add_response("detect_pii_entities", {"Entities": []}, {"Text": ANY, "LanguageCode": "en"})
    recording = Recording(client)
    assert ComprehendDetector(client=recording).detect(text) == []
    assert "".join(recording.texts) == text
    assert all(len(chunk.encode()) <= MAX_TEXT_BYTES for chunk in recording.texts)
    assert all(chunk.endswith(" ") for chunk in recording.texts)


def test_overlapping_entities_keep_the_longer_then_the_surer(client: Any, stubber: Stubber) -> None:
    text = "Send it to Ann Lee, 12 Oak Road, Leeds, or call 415-555-0132"
    begin = text.index("415")
    answer(
        stubber,
        text,
        entity(text, "Ann Lee", "NAME", score=0.99),
        entity(text, "Ann Lee, 12 Oak Road, Leeds", "ADDRESS", score=0.7),
        {"Type": "PHONE", "Score": 0.8, "BeginOffset": begin, "EndOffset": begin + 12},
        {"Type": "SSN", "Score": 0.6, "BeginOffset": begin, "EndOffset": begin + 12},
    )
    spans = ComprehendDetector(client=client).detect(text)
    assert [(span.kind, text[span.start : span.end]) for span in spans] == [
        ("ADDRESS", "Ann Lee, 12 Oak Road, Leeds"),
        ("PHONE", "415-555-0132"),
    ]


def test_a_blank_text_calls_nothing(client: Any, stubber: Stubber) -> None:
    assert ComprehendDetector(client=client).detect("") == []
    assert ComprehendDetector(client=client).detect("  \n ") == []


def test_without_a_client_it_takes_the_process_wide_one_on_first_use(
    client: Any, stubber: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def process_client(service: str) -> Any:
        asked.append(service)
        return client

    monkeypatch.setattr(aws_clients, "client", process_client)
    detector = ComprehendDetector()
    assert asked == []
    answer(stubber, "Ann Lee", entity("Ann Lee", "Ann Lee", "NAME"))
    assert found("Ann Lee", detector) == [("NAME", "Ann Lee", "Ann Lee")]
    assert asked == ["comprehend"]
