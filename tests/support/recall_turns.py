"""Turns sent and episodes found through the service on moto, for the recall tests."""

from typing import Any

from tests.support.lambda_harness import Service

T, U = "acme", "alice"
MEMORY = f"/v1/tenants/{T}/users/{U}/memory"


def ingest(service: Service, *texts: str) -> None:
    """The turns accepted and condensed (and the user indexed) before this returns."""
    items = [{"id": f"turn{abs(hash(text)) % 10**8}", "text": text} for text in texts]
    assert service.call("POST", MEMORY, {"items": items}).status == 202
    service.drain()


def found(service: Service, text: str, **options: Any) -> list[str]:
    """The texts of the episodes a query finds, best first."""
    response = service.call("POST", MEMORY + "/query", {"query": text, "types": ["episode"], **options})
    assert response.status == 200, response.body
    return [result["text"] for result in response.body["results"]]
