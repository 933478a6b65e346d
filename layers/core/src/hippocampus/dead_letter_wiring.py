"""The condenser's dead-letter services: its scheduled pass and the redrive (docs/operations.md
"The dead-letter queue"). Part of the composition root: `wiring.condenser_handler` hands in the
process's job store; each service is built on first use, once per handler.
"""

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hippocampus.adapters import aws_clients
from hippocampus.settings import get_settings

if TYPE_CHECKING:
    from hippocampus.contracts.ports import JobStore
    from hippocampus.domain.condense.dead_letters import DeadLetterReconciler
    from hippocampus.domain.condense.redrive import DeadLetterRedrive


def dead_letter_services(
    jobs: "Callable[[], JobStore]",
) -> "tuple[Callable[[], DeadLetterReconciler], Callable[[], DeadLetterRedrive]]":
    """The pass's and the redrive's providers; a missing MEMORY_DLQ_URL or MEMORY_QUEUE_URL fails now."""
    settings = get_settings()
    dlq_url, queue_url = settings.require("dlq_url"), settings.require("queue_url")

    @lru_cache(maxsize=1)
    def reconciler() -> "DeadLetterReconciler":
        from hippocampus.adapters.sqs import SqsDeadLetters
        from hippocampus.domain.condense.dead_letters import DeadLetterReconciler

        return DeadLetterReconciler(jobs(), SqsDeadLetters(dlq_url, _sqs))

    @lru_cache(maxsize=1)
    def redrive() -> "DeadLetterRedrive":
        from hippocampus.adapters.sqs import SqsRedrive
        from hippocampus.domain.condense.redrive import DeadLetterRedrive

        return DeadLetterRedrive(jobs(), SqsRedrive(dlq_url, queue_url, _sqs))

    return reconciler, redrive


def _sqs() -> Any:
    return aws_clients.client("sqs")
