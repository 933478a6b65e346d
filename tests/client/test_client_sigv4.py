"""HTTPS requests are signed with SigV4 for execute-api (docs/api.md "Authentication"), with the
environment's credentials; http:// is not signed; botocore is only needed when signing."""

import hashlib
import hmac
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from aws_credentials import KEY, SECRET, TOKEN, environment_credentials
from client_test_servers import memory_body

from hippocampus_client import ConfigurationError, MemoryClient, MissingDependencyError, SigV4Transport

API = "https://abc123.execute-api.eu-west-1.amazonaws.com/dev/"


@pytest.fixture(autouse=True)
def fake_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Credentials from the environment only: no profile, no instance metadata."""
    environment_credentials(monkeypatch, tmp_path)


def signed_client(endpoint: str, seen: list[httpx2.Request], **options: Any) -> MemoryClient:
    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=memory_body() | {"context": "c", "versions": []})

    transport = SigV4Transport(endpoint, transport=httpx2.MockTransport(answer), **options)
    return MemoryClient(tenant="acme", transport=transport)


def expected_signature(request: httpx2.Request, region: str) -> str:
    """SigV4 computed independently of botocore (AWS's published algorithm)."""
    signed = ["content-type", "host", "x-amz-date", "x-amz-security-token"]
    signed = [name for name in signed if name in request.headers]
    query = "&".join(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, v in sorted(request.url.params.multi_items())
    )
    canonical = "\n".join(
        [
            request.method,
            quote(request.url.path, safe="/~"),
            query,
            "".join(f"{name}:{request.headers[name].strip()}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(request.content).hexdigest(),
        ]
    )
    stamp = request.headers["x-amz-date"]
    scope = f"{stamp[:8]}/{region}/execute-api/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = f"AWS4{SECRET}".encode()
    for part in (stamp[:8], region, "execute-api", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return (
        f"AWS4-HMAC-SHA256 Credential={KEY}/{scope}, SignedHeaders={';'.join(signed)}, Signature={signature}"
    )


def test_requests_to_the_api_are_signed_for_its_region() -> None:
    seen: list[httpx2.Request] = []
    memory = signed_client(API, seen)
    assert memory.get("alice") == "Alice sells candles."
    memory.history("alice", limit=5)
    memory.context("alice", "what do they sell?")
    assert seen[0].url.path == "/dev/v1/tenants/acme/users/alice/memory"
    for request in seen:
        assert request.headers["x-amz-security-token"] == TOKEN
        assert request.headers["authorization"] == expected_signature(request, "eu-west-1")


def test_an_https_endpoint_signs_by_default_and_http_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    signed = MemoryClient(endpoint=API, tenant="acme")
    plain = MemoryClient(endpoint="http://127.0.0.1:3000", tenant="acme")
    assert isinstance(signed.transport, SigV4Transport)
    assert not isinstance(plain.transport, SigV4Transport)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert isinstance(
        MemoryClient(endpoint="http://proxy:8080", tenant="acme", sign=True).transport, SigV4Transport
    )


def test_a_custom_domain_takes_the_region_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    seen: list[httpx2.Request] = []
    signed_client("https://memory.example.com/", seen).get("alice")
    assert "/ap-south-1/execute-api/aws4_request" in seen[0].headers["authorization"]
    with pytest.raises(ConfigurationError, match="region"):
        monkeypatch.delenv("AWS_REGION")
        SigV4Transport("https://memory.example.com/")


def test_without_credentials_a_read_is_none_and_strict_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    seen: list[httpx2.Request] = []
    assert signed_client(API, seen).get("alice") is None
    strict = MemoryClient(tenant="acme", strict=True, transport=signed_client(API, seen).transport)
    with pytest.raises(ConfigurationError, match="credentials"):
        strict.get("alice")
    assert seen == [], "nothing is sent unsigned"


def test_signing_without_botocore_names_the_aws_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in [name for name in sys.modules if name == "botocore" or name.startswith("botocore.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "botocore", None)
    with pytest.raises(MissingDependencyError, match=r"hippocampus-client\[aws\]"):
        MemoryClient(endpoint=API, tenant="acme")
    assert MemoryClient(endpoint="http://127.0.0.1:3000", tenant="acme").tenant == "acme"
