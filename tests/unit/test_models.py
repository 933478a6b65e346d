"""Request models enforce every limit of docs/api.md "Limits"."""

import pytest
from pydantic import ValidationError

from hippocampus.contracts.models import IngestItem, IngestRequest, PutMemoryRequest


def fields(error: ValidationError) -> list[tuple]:
    return [e["loc"] for e in error.errors()]


@pytest.mark.parametrize("identifier", ["alice", "a", "user@example.com", "A1._@:-x", "x" * 128])
def test_valid_identifiers(identifier):
    assert IngestItem(id=identifier, text="hi").id == identifier


@pytest.mark.parametrize("identifier", ["", "-leading", ".dot", "has space", "slash/", "x" * 129, "émoji"])
def test_invalid_identifiers(identifier):
    with pytest.raises(ValidationError) as caught:
        IngestItem(id=identifier, text="hi")
    assert ("id",) in fields(caught.value)


def test_exactly_one_of_text_or_pairs():
    with pytest.raises(ValidationError, match="exactly one"):
        IngestItem(text="a", user_assistant_pairs=[{"user": "b"}])
    with pytest.raises(ValidationError, match="exactly one"):
        IngestItem()


def test_text_limits():
    assert IngestItem(text="x" * 32_000).text
    with pytest.raises(ValidationError):
        IngestItem(text="x" * 32_001)
    with pytest.raises(ValidationError, match="blank"):
        IngestItem(text="   ")


def test_pairs_limits():
    assert IngestItem(user_assistant_pairs=[{"assistant": "only the assistant spoke"}])
    with pytest.raises(ValidationError):
        IngestItem(user_assistant_pairs=[])
    with pytest.raises(ValidationError):
        IngestItem(user_assistant_pairs=[{"user": "hi"}] * 51)
    with pytest.raises(ValidationError, match="non-empty"):
        IngestItem(user_assistant_pairs=[{"user": " ", "assistant": ""}])


def test_metadata_sizes_are_compact_json_bytes():
    almost = "x" * (16 * 1024 - len('{"k":""}'))
    assert IngestItem(text="t", metadata={"k": almost})
    with pytest.raises(ValidationError, match="16384 bytes"):
        IngestItem(text="t", metadata={"k": almost + "x"})
    with pytest.raises(ValidationError, match="1024 bytes"):
        IngestItem(text="t", additional_metadata={"k": "é" * 600})  # two bytes each in UTF-8


def test_other_limits():
    with pytest.raises(ValidationError):
        IngestItem(text="t", custom_instructions="x" * 2001)
    with pytest.raises(ValidationError):
        IngestItem(text="t", user_name="x" * 129)
    with pytest.raises(ValidationError):
        IngestRequest(items=[])
    with pytest.raises(ValidationError):
        IngestRequest(items=[{"text": "t"}] * 101)
    assert len(IngestRequest(items=[{"text": "t"}] * 100).items) == 100


def test_facts_need_text_and_infer_defaults_true():
    assert IngestItem(text="t").infer is True
    with pytest.raises(ValidationError, match="verbatim"):
        IngestItem(user_assistant_pairs=[{"user": "hi"}], infer=False)


def test_unknown_fields_are_rejected_by_name():
    with pytest.raises(ValidationError) as caught:
        IngestItem(text="t", colour="blue")
    assert ("colour",) in fields(caught.value)


def test_put_model():
    assert PutMemoryRequest(memory="m").expected_version is None
    with pytest.raises(ValidationError):
        PutMemoryRequest(memory="m", expected_version=-1)


def test_metadata_must_be_shallow_plain_json():
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ValidationError, match="nested at most 32"):
        IngestItem(text="t", metadata=deep)
    with pytest.raises(ValidationError, match="finite"):
        IngestItem(text="t", metadata={"score": float("nan")})
    assert IngestItem(text="t", metadata={"a": {"b": [1, 2.5, None, True]}})


@pytest.mark.parametrize(
    ("model", "values", "bad"),
    [
        (IngestItem, {"text": "t", "infer": "false"}, "infer"),
        (IngestItem, {"text": "t", "infer": 0}, "infer"),
        (IngestItem, {"text": 5}, "text"),
        (IngestItem, {"text": "t", "user_name": 7}, "user_name"),
        (PutMemoryRequest, {"memory": "m", "expected_version": True}, "expected_version"),
        (PutMemoryRequest, {"memory": "m", "expected_version": "3"}, "expected_version"),
        (PutMemoryRequest, {"memory": "m", "expected_version": 3.0}, "expected_version"),
    ],
)
def test_request_fields_are_never_coerced(model, values, bad):
    with pytest.raises(ValidationError) as caught:
        model.model_validate(values)
    assert (bad,) in fields(caught.value)


@pytest.mark.parametrize("memory", [" ", "\n\t ", "\u3000"])
def test_a_blank_summary_is_refused(memory):
    with pytest.raises(ValidationError, match="blank"):
        PutMemoryRequest(memory=memory, expected_version=0)
    assert PutMemoryRequest(memory=" Alice. ", expected_version=0).memory == " Alice. "
