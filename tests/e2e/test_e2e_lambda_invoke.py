"""Direct invocation on the local stack: boto3's Lambda client against its Invoke API.

The same port serves `POST /2015-03-31/functions/{name}/invocations` (docs/api.md
"Direct invocation"), so the real handlers answer `lambda:Invoke` as deployed, under the deployed names.
"""

import json
from typing import Any

import boto3
import pytest
from botocore.config import Config
from e2e_support import Api, LocalStackProcess, marker, wait_for

from infra.config import config_from_cdk_json

pytestmark = pytest.mark.e2e

PREFIX = config_from_cdk_json().name_prefix  # hippocampus-dev
GET_MEMORY, INGEST = f"{PREFIX}-get-memory", f"{PREFIX}-ingest"


@pytest.fixture(scope="module")
def lambda_client(local_stack: LocalStackProcess | None) -> Any:
    if local_stack is None:
        pytest.skip("the Invoke API is the local stack's (MEMORY_API_URL targets a deployed stack)")
    return boto3.client(
        "lambda",
        endpoint_url=local_stack.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}),
    )


def invoke(client: Any, function: str, payload: dict[str, Any]) -> Any:
    """The function's result; the invocation itself must succeed, as it does in AWS."""
    response = client.invoke(FunctionName=function, Payload=json.dumps(payload))
    assert response["StatusCode"] == 200
    assert "FunctionError" not in response, response["Payload"].read()
    return json.loads(response["Payload"].read())


def test_get_memory_answers_what_the_http_route_answers(
    lambda_client: Any, api: Api, tenant: str, user: str
) -> None:
    payload = {"action": "get_memory", "tenant_id": tenant, "user_id": user}
    assert invoke(lambda_client, GET_MEMORY, payload) == api.memory(tenant, user)
    # The ARN form with `$LATEST` names the same function.
    arn = f"arn:aws:lambda:us-east-1:123456789012:function:{GET_MEMORY}:$LATEST"
    assert invoke(lambda_client, arn, payload)["version"] == 0


def test_ingest_returns_jobs_and_the_condenser_runs(lambda_client: Any, tenant: str, user: str) -> None:
    word = marker()
    items = [
        {
            "id": "turn-1",
            "user_assistant_pairs": [{"user": f"I sell candles, code {word}.", "assistant": "Nice!"}],
        }
    ]
    result = invoke(
        lambda_client, INGEST, {"action": "ingest", "tenant_id": tenant, "user_id": user, "items": items}
    )
    (job,) = result["jobs"]
    assert job["item_id"] == "turn-1"

    def done() -> dict[str, Any] | None:
        current = invoke(
            lambda_client, GET_MEMORY, {"action": "get_job", "tenant_id": tenant, "job_id": job["job_id"]}
        )
        return current if current["status"] == "completed" else None

    assert wait_for(done, what="the job to complete")["memory_version"] >= 1
    memory = invoke(lambda_client, GET_MEMORY, {"action": "get_memory", "tenant_id": tenant, "user_id": user})
    assert word in memory["memory"]


def test_an_action_error_is_the_result_not_a_function_error(lambda_client: Any, tenant: str) -> None:
    result = invoke(lambda_client, GET_MEMORY, {"action": "ingest", "tenant_id": tenant, "user_id": "u"})
    assert result["error"]["status"] == 422 and result["error"]["code"] == "validation_error"


def test_refused_invocations_raise_lambdas_own_exceptions(lambda_client: Any) -> None:
    with pytest.raises(lambda_client.exceptions.ResourceNotFoundException, match="Function not found: arn:"):
        lambda_client.invoke(FunctionName=f"{PREFIX}-nope", Payload=b"{}")
    with pytest.raises(lambda_client.exceptions.InvalidRequestContentException):
        lambda_client.invoke(FunctionName=GET_MEMORY, Payload=b"{not json")
    assert lambda_client.invoke(FunctionName=GET_MEMORY, InvocationType="DryRun")["StatusCode"] == 204


def test_an_event_invocation_is_accepted_then_runs(
    lambda_client: Any, api: Api, tenant: str, user: str
) -> None:
    fact = {"id": "pref", "text": "Prefers dark mode.", "infer": False}
    payload = {"action": "ingest", "tenant_id": tenant, "user_id": user, "items": [fact]}
    response = lambda_client.invoke(FunctionName=INGEST, InvocationType="Event", Payload=json.dumps(payload))
    assert response["StatusCode"] == 202 and response["Payload"].read() == b""
    facts = wait_for(lambda: api.memory(tenant, user)["facts"], what="the event's fact")
    assert [f["id"] for f in facts] == ["pref"]
