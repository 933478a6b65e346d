"""get_memory: the read routes of the API and the direct-invoke read actions.

Nothing heavy is imported here: no openai, no X-Ray SDK — this is the latency-critical path.
"""

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from hippocampus.http import build_resolver, handle
from hippocampus.observability import logger, metrics
from hippocampus.read_api import DIRECT_ACTIONS, router
from hippocampus.settings import get_settings

get_settings()  # a bad configuration fails the cold start, naming the variable
app = build_resolver()
app.include_router(router)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle(app, event, context, DIRECT_ACTIONS)
