"""Amazon Bedrock through the Converse API (IAM auth, no API key); a structured answer through
tool use: the schema is the input schema of the one tool the model is made to call."""

import json
from collections.abc import Mapping
from typing import Any

from hippocampus.adapters.llm.attempts import call_in_time
from hippocampus.adapters.sdk_clients import Lazy, bedrock_runtime
from hippocampus.contracts.ports import LlmResult

TEMPERATURE = 0.1
# The first call and one retry, made by `call_in_time` (SQS redelivery is the outer retry): botocore
# makes a single attempt, since it has no per-call timeout to keep a retry within the time left.
RETRIES = 1
TOOL_NAME = "record_answer"


class BedrockChat:
    name = "bedrock"

    def __init__(self, *, model: str, timeout_s: float, client: Any = None) -> None:
        self.model = model
        self._timeout_s = timeout_s
        self._client: Lazy[Any] = Lazy(lambda: bedrock_runtime(timeout_s), client)

    def client(self) -> Any:
        """The `bedrock-runtime` client, created once on first use (tests pass a stubbed one)."""
        return self._client()

    def complete(
        self,
        system: str,
        prompt: str,
        timeout_s: float | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> LlmResult:
        extra: dict[str, Any] = {}
        if schema is not None:
            tool = {
                "name": TOOL_NAME,
                "description": "Record the answer.",
                "inputSchema": {"json": dict(schema)},
            }
            extra["toolConfig"] = {"tools": [{"toolSpec": tool}], "toolChoice": {"tool": {"name": TOOL_NAME}}}

        def attempt(_seconds: float) -> Any:
            # The client's read timeout bounds the attempt: botocore cannot shorten one call.
            return self.client().converse(
                modelId=self.model,
                system=[{"text": system}],
                messages=[{"role": "user", "content": [{"text": prompt}]}],
                inferenceConfig={"temperature": TEMPERATURE},
                **extra,
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
        # The tool's input is the structured answer; a model that answered in text is read as text.
        tool_inputs = [block["toolUse"].get("input") for block in blocks if "toolUse" in block]
        text = (
            json.dumps(tool_inputs[0]) if tool_inputs else "".join(block.get("text", "") for block in blocks)
        )
        return LlmResult(
            text=text,
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
