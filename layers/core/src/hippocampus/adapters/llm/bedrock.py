"""Amazon Bedrock through the Converse API (IAM auth, no API key)."""

from typing import Any

from hippocampus.adapters.llm.attempts import call_in_time
from hippocampus.adapters.sdk_clients import Lazy, bedrock_runtime
from hippocampus.contracts.ports import LlmResult

TEMPERATURE = 0.1
# The first call and one retry, made by `call_in_time` (SQS redelivery is the outer retry): botocore
# makes a single attempt, since it has no per-call timeout to keep a retry within the time left.
RETRIES = 1


class BedrockChat:
    name = "bedrock"

    def __init__(self, *, model: str, timeout_s: float, client: Any = None) -> None:
        self.model = model
        self._timeout_s = timeout_s
        self._client: Lazy[Any] = Lazy(lambda: bedrock_runtime(timeout_s), client)

    def client(self) -> Any:
        """The `bedrock-runtime` client, created once on first use (tests pass a stubbed one)."""
        return self._client()

    def complete(self, system: str, prompt: str, timeout_s: float | None = None) -> LlmResult:
        def attempt(_seconds: float) -> Any:
            # The client's read timeout bounds the attempt: botocore cannot shorten one call.
            return self.client().converse(
                modelId=self.model,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"temperature": TEMPERATURE},
            )

        # An attempt is only started when a whole client timeout still fits in `timeout_s`.
        response = call_in_time(
            attempt,
            attempt_timeout_s=self._timeout_s,
            timeout_s=timeout_s,
            retries=RETRIES,
            is_transient=_is_transient,
            min_attempt_s=self._timeout_s,
        )
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        usage = response.get("usage", {})
        return LlmResult(
            text="".join(block.get("text", "") for block in blocks),
            prompt_tokens=int(usage.get("inputTokens", 0)),
            completion_tokens=int(usage.get("outputTokens", 0)),
        )


def _is_transient(error: Exception) -> bool:
    """What botocore's standard mode would retry: throttling, 5xx, connection errors and timeouts."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotocoreConnectionError

    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        return status == 429 or status >= 500
    return isinstance(error, BotocoreConnectionError | HTTPClientError)
