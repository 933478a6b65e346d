"""Amazon Bedrock through the Converse API (IAM auth, no API key)."""

import threading
from typing import Any

from hippocampus.contracts.ports import LlmResult

TEMPERATURE = 0.1
# The first call and one retry; SQS redelivery is the outer retry. (botocore's `max_attempts` counts
# retries only — `max_attempts: 2` would mean three calls — so the total is given explicitly.)
TOTAL_MAX_ATTEMPTS = 2


class BedrockChat:
    name = "bedrock"

    def __init__(self, *, model: str, timeout_s: float, client: Any = None) -> None:
        self.model = model
        self._timeout_s = timeout_s
        self._client = client
        self._lock = threading.Lock()

    def client(self) -> Any:
        """The `bedrock-runtime` client, created once on first use (tests pass a stubbed one)."""
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                config = Config(
                    connect_timeout=self._timeout_s,
                    read_timeout=self._timeout_s,
                    retries={"total_max_attempts": TOTAL_MAX_ATTEMPTS, "mode": "standard"},
                )
                self._client = boto3.client("bedrock-runtime", config=config)
            return self._client

    def complete(self, system: str, prompt: str) -> LlmResult:
        response = self.client().converse(
            modelId=self.model,
            system=[{"text": system}],
            messages=[{"role": "user", "content": [{"text": prompt}]}],
            inferenceConfig={"temperature": TEMPERATURE},
        )
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        usage = response.get("usage", {})
        return LlmResult(
            text="".join(block.get("text", "") for block in blocks),
            prompt_tokens=int(usage.get("inputTokens", 0)),
            completion_tokens=int(usage.get("outputTokens", 0)),
        )
