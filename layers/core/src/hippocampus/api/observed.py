"""What every API function does around serving an event: the invocation's log context (its
correlation id, API Gateway's request id) and the metrics of the request, flushed once."""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.observability import logger, metrics

JSON = dict[str, Any]
LambdaHandler = Callable[[Any, LambdaContext], JSON]


def observed(serve: LambdaHandler) -> LambdaHandler:
    """`serve` as a Lambda handler: logged with the request's correlation id, its metrics flushed."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
    @metrics.log_metrics
    def lambda_handler(event: Any, context: LambdaContext) -> JSON:
        return serve(event, context)

    return lambda_handler
