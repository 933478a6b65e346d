"""Errors over HTTP: one envelope everywhere, the right status, and a rejected request changes nothing."""

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
