"""SQS's API on the local API's port, forwarded to moto (docs/architecture.md "Local stack").

The CLI finds the local stack by its API's URL (`--local`: http://127.0.0.1:3000); the queues are on
moto, on a port chosen at each start. A request in SQS's JSON protocol (`X-Amz-Target:
AmazonSQS.<Action>`, what current SDKs and the AWS CLI send) that reaches the API's port goes to moto
as it came, Host header included (moto builds a queue's URL from it, so the URLs it answers point at
this port too), and moto's answer comes back as it was: `hippocampus events` and `aws sqs
receive-message --endpoint-url http://127.0.0.1:3000 ...` read the events queue without knowing
moto's port. A long poll holds its request (20 s at most), as it would on SQS.

No signature is checked locally, but moto picks the service and the region of a request by its
signature's credential scope (an unsigned one goes to S3): each request is given a dummy signature
for SQS in the stack's region, so an unsigned request (`--no-sign-request`) and one signed for
another region reach the stack's queues too.
"""

import http.client
import json
import logging
from collections.abc import Callable, Sequence
from http import HTTPStatus
from urllib.parse import urlsplit

from local_stack.apigateway import HttpRequest, HttpResponse

TARGET_PREFIX = "AmazonSQS."
# Over SQS's longest long poll (20 s), with room for a busy machine.
FORWARD_TIMEOUT_S = 60.0
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})
# The server answering on the stack's port sets its own.
_NOT_FORWARDED_BACK = _HOP_BY_HOP | {"date"}

log = logging.getLogger("local_stack.sqs_proxy")


def serves(method: str, headers: Sequence[tuple[str, str]]) -> bool:
    target = next((value for name, value in headers if name.lower() == "x-amz-target"), "")
    return method == "POST" and target.startswith(TARGET_PREFIX)


class SqsProxy:
    """Forwards SQS requests to moto; `endpoint` gives moto's URL (known once moto started), `region`
    the stack's."""

    def __init__(self, endpoint: Callable[[], str], region: str) -> None:
        self._endpoint = endpoint
        self._authorization = (
            f"AWS4-HMAC-SHA256 Credential=local/20000101/{region}/sqs/aws4_request, "
            "SignedHeaders=host, Signature=0"
        )

    def handle(self, request: HttpRequest) -> HttpResponse:
        moto = urlsplit(self._endpoint())
        headers = {
            name: value
            for name, value in request.headers
            if name.lower() not in _HOP_BY_HOP and name.lower() != "authorization"
        }
        headers["Authorization"] = self._authorization
        connection = http.client.HTTPConnection(
            moto.hostname or "127.0.0.1", moto.port, timeout=FORWARD_TIMEOUT_S
        )
        try:
            connection.request("POST", request.target, body=request.body, headers=headers)
            answer = connection.getresponse()
            body = answer.read()
            kept = [(n, v) for n, v in answer.getheaders() if n.lower() not in _NOT_FORWARDED_BACK]
            return HttpResponse(answer.status, kept, body)
        except (OSError, http.client.HTTPException) as error:
            log.warning("forwarding an SQS request to moto failed: %s", error)
            document = {"__type": "com.amazonaws.sqs#ServiceUnavailable", "message": "moto did not answer"}
            return HttpResponse(
                HTTPStatus.SERVICE_UNAVAILABLE,
                [("Content-Type", "application/x-amz-json-1.0")],
                json.dumps(document).encode(),
            )
        finally:
            connection.close()
