"""Errors over HTTP: one envelope everywhere, the right status, and a rejected request changes nothing."""

import json
from typing import Any

import pytest
from e2e_support import Api, assert_envelope

pytestmark = pytest.mark.e2e


def _fields(error: dict[str, Any]) -> set[str]:
    return {detail["field"] for detail in error["details"]}


def test_malformed_json_is_400(api: Api, tenant: str, user: str) -> None:
    response = api.request("POST", Api.memory_path(tenant, user), data=b'{"items": [')
    assert_envelope(response, 400, "malformed_json")
    assert api.memory(tenant, user)["version"] == 0


def test_unknown_route_is_404(api: Api) -> None:
    assert_envelope(api.request("GET", "/v1/nothing-here"), 404)
    assert_envelope(api.request("POST", "/v1/tenants/acme/users/alice/elsewhere", json={}), 404)


def test_wrong_method_is_405(api: Api, tenant: str, user: str) -> None:
    response = api.request("PATCH", Api.memory_path(tenant, user), json={})
    assert_envelope(response, 405)
    allowed = {method.strip() for method in response.headers.get("Allow", "").split(",")}
    assert allowed == {"GET", "POST", "PUT", "DELETE"}
    assert_envelope(api.request("POST", "/v1/health", json={}), 405)


def test_schema_violations_are_422_and_name_the_field(api: Api, tenant: str, user: str) -> None:
    path = Api.memory_path(tenant, user)
    both = api.request("POST", path, json={"items": [{"text": "a", "user_assistant_pairs": [{"user": "b"}]}]})
    assert any(field.startswith("items[0]") for field in _fields(assert_envelope(both, 422))), both.text

    empty_items = api.request("POST", path, json={"items": []})
    assert "items" in _fields(assert_envelope(empty_items, 422))

    too_long = api.request("POST", path, json={"items": [{"text": "x" * 32_001}]})
    assert any("text" in field for field in _fields(assert_envelope(too_long, 422))), too_long.text

    unknown_field = api.request("POST", path, json={"items": [{"text": "a", "colour": "red"}]})
    assert any("colour" in field for field in _fields(assert_envelope(unknown_field, 422))), (
        unknown_field.text
    )

    bad_user = api.request("GET", Api.memory_path(tenant, "bad id!"))
    assert_envelope(bad_user, 422)

    over_limit = api.request("GET", path + "/history", params={"limit": 101})
    assert "limit" in _fields(assert_envelope(over_limit, 422)), over_limit.text

    assert api.memory(tenant, user)["version"] == 0  # nothing was accepted


def test_a_body_over_one_mib_is_413(api: Api, tenant: str, user: str) -> None:
    body = b'{"items": [{"text": "' + b"x" * (1024 * 1024) + b'"}]}'
    response = api.request("POST", Api.memory_path(tenant, user), data=body)
    assert_envelope(response, 413, "payload_too_large")
    assert api.memory(tenant, user)["version"] == 0


def test_client_errors_never_produce_a_5xx(api: Api, tenant: str, user: str) -> None:
    path = Api.memory_path(tenant, user)
    attempts = [
        ("POST", path, b"not json at all"),
        ("POST", path, b"[]"),
        ("POST", path, b'{"items": "nope"}'),
        ("POST", path, b'{"items": [null]}'),
        ("PUT", path, b'{"memory": 42, "expected_version": "x"}'),
        ("DELETE", path + "/facts/" + "f" * 200, None),
        ("GET", f"/v1/tenants/{tenant}/jobs/%20", None),
    ]
    for method, target, data in attempts:
        response = api.request(method, target, data=data)
        assert 400 <= response.status_code < 500, (method, target, response.status_code, response.text)
        assert_envelope(response, response.status_code)
    assert api.memory(tenant, user)["version"] == 0


def test_a_body_that_is_not_utf8_is_400(api: Api, tenant: str, user: str) -> None:
    # Not UTF-8: API Gateway (no binary media types) hands it over as text, invalid bytes replaced.
    for method in ("POST", "PUT"):
        response = api.request(method, Api.memory_path(tenant, user), data=b"\xff\xfe\x00garbage")
        assert_envelope(response, 400, "malformed_json")
    assert api.memory(tenant, user)["version"] == 0


def _item(**fields: Any) -> bytes:
    return json.dumps({"items": [{"id": "t1", "text": "I sell candles."} | fields]}).encode()


def _put(**fields: Any) -> bytes:
    return json.dumps({"memory": "Alice sells soap.", "expected_version": 0} | fields).encode()


_JSON = {"Content-Type": "application/json"}
# (method, path under the user's memory, body, headers, status, code): a representative subset of
# tests/unit/test_hostile_input.py, through the HTTP server and the API Gateway emulation.
HOSTILE = {
    "text/plain": ("POST", "", _item(), {"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
    "application/xml": (
        "PUT",
        "",
        _put(),
        {"Content-Type": "application/xml"},
        415,
        "unsupported_media_type",
    ),
    "multipart": (
        "POST",
        "",
        _item(),
        {"Content-Type": "multipart/form-data; boundary=x"},
        415,
        "unsupported_media_type",
    ),
    "*/*": ("POST", "", _item(), {"Content-Type": "*/*"}, 415, "unsupported_media_type"),
    "a form, as curl -d sends": (
        "POST",
        "",
        _item(),
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
        "unsupported_media_type",
    ),
    "bytes ED B3 BF": ("POST", "", b'{"items": [{"text": "a\xed\xb3\xbf"}]}', _JSON, 400, "malformed_json"),
    "an overlong C0 AF": (
        "PUT",
        "",
        b'{"memory": "a\xc0\xaf", "expected_version": 0}',
        _JSON,
        400,
        "malformed_json",
    ),
    "a lone surrogate": ("POST", "", b'{"items": [{"text": "a\\udcff"}]}', _JSON, 400, "malformed_json"),
    "a duplicate key": (
        "PUT",
        "",
        b'{"memory": "a", "memory": "b", "expected_version": 0}',
        _JSON,
        400,
        "malformed_json",
    ),
    "NaN": ("POST", "", b'{"items": [{"text": "t", "metadata": {"x": NaN}}]}', _JSON, 400, "malformed_json"),
    "expected_version true": ("PUT", "", _put(expected_version=True), _JSON, 422, "validation_error"),
    "expected_version '0'": ("PUT", "", _put(expected_version="0"), _JSON, 422, "validation_error"),
    "infer 'false'": ("POST", "", _item(infer="false"), _JSON, 422, "validation_error"),
    "a blank memory": ("PUT", "", _put(memory="   "), _JSON, 422, "validation_error"),
    "an empty Idempotency-Key": (
        "POST",
        "",
        _item(),
        _JSON | {"Idempotency-Key": ""},
        422,
        "validation_error",
    ),
    "metadata 33 deep": (
        "POST",
        "",
        _item(metadata=json.loads('{"a":' * 33 + "1" + "}" * 33)),
        _JSON,
        422,
        "validation_error",
    ),
    "a NUL in the fact id": ("DELETE", "/facts/f%00", None, {}, 422, "validation_error"),
    "CRLF in the fact id": ("DELETE", "/facts/f%0D%0A", None, {}, 422, "validation_error"),
    "a hash in the fact id": ("DELETE", "/facts/f%23", None, {}, 422, "validation_error"),
    "TRACE": ("TRACE", "", None, {}, 404, "not_found"),
    "an unknown method": ("FOO", "", None, {}, 404, "not_found"),
}


@pytest.mark.parametrize(
    ("method", "below", "body", "headers", "status", "code"), HOSTILE.values(), ids=list(HOSTILE)
)
def test_hostile_requests_get_their_envelope_and_change_nothing(
    api: Api,
    tenant: str,
    user: str,
    method: str,
    below: str,
    body: bytes | None,
    headers: dict[str, str],
    status: int,
    code: str,
) -> None:
    path = Api.memory_path(tenant, user)
    api.ingest(tenant, user, [{"id": "f", "text": "Keeps bees.", "infer": False}])
    before = api.memory(tenant, user)
    response = api.request(method, path + below, data=body, headers=headers, exact_headers=True)
    assert_envelope(response, status, code)
    assert api.memory(tenant, user) == before and before["version"] == 0 and len(before["facts"]) == 1
    assert api.history(tenant, user) == []


@pytest.mark.parametrize(
    "content_type", ["APPLICATION/JSON", "Application/Json; charset=utf-8", "application/vnd.api+json"]
)
def test_json_under_any_json_media_type_is_accepted(
    api: Api, tenant: str, user: str, content_type: str
) -> None:
    response = api.request(
        "POST", Api.memory_path(tenant, user), data=_item(infer=False), headers={"Content-Type": content_type}
    )
    assert response.status_code == 202, response.text
    assert [fact["id"] for fact in api.memory(tenant, user)["facts"]] == ["t1"]
