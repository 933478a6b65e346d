"""A route of a user's memory and its twin in an agent's scope (docs/api.md "Agent scopes").

Most routes of an agent's scope are the user's route under `…/agents/{agent_id}/`, served by the
same handler with the agent's scope key in place of the user id (contracts/scopes.py): the services
do the rest. `scoped_route` registers both from one declaration, so the two never drift apart; the
twin's signature is the handler's with `agent_id` after `user_id`, which is what Powertools reads
to validate the path and document the operation.
"""

import inspect
import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api.params import AgentId
from hippocampus.contracts.routes import agent_path, powertools_path
from hippocampus.contracts.scopes import agent_scope

AGENT_TAGS: Final = ["agents"]
Handler = TypeVar("Handler", bound=Callable[..., Any])


def agent_operation_id(operation_id: str) -> str:
    """`listFacts` → `listAgentFacts`: the user route's id with "Agent" after its verb."""
    verb = re.match(r"[a-z]+", operation_id)
    assert verb is not None, operation_id
    return f"{verb.group(0)}Agent{operation_id[verb.end() :]}"


def scoped_route(
    router: APIGatewayRouter,
    method: str,
    path: str,
    *,
    summary: str,
    agent_summary: str,
    operation_id: str,
    tags: list[str],
    responses: dict[int, OpenAPIResponse],
    agent_responses: dict[int, OpenAPIResponse] | None = None,
) -> Callable[[Handler], Handler]:
    """Register the handler on the user's `path` and, in an agent's scope, on its twin (with
    `agent_responses` when they say something else, else the user route's)."""

    def register(handler: Handler) -> Handler:
        router.route(
            powertools_path(path),
            method,
            summary=summary,
            operation_id=operation_id,
            tags=tags,
            responses=responses,
        )(handler)
        router.route(
            powertools_path(agent_path(path)),
            method,
            summary=agent_summary,
            operation_id=agent_operation_id(operation_id),
            tags=AGENT_TAGS,
            responses=agent_responses or responses,
        )(in_agent_scope(handler))
        return handler

    return register


def in_agent_scope(handler: Callable[..., Any]) -> Callable[..., Any]:
    """The handler taking `agent_id` too, called with the agent's scope key as its `user_id`."""
    signature = inspect.signature(handler)
    parameters = list(signature.parameters.values())
    place = [parameter.name for parameter in parameters].index("user_id") + 1
    agent = inspect.Parameter("agent_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=AgentId)

    def twin(**arguments: Any) -> Any:
        arguments["user_id"] = agent_scope(arguments["user_id"], arguments.pop("agent_id"))
        return handler(**arguments)

    twin_signature = signature.replace(parameters=[*parameters[:place], agent, *parameters[place:]])
    # Powertools reads the parameters from the signature, and their dependencies from the annotations.
    twin.__signature__ = twin_signature  # type: ignore[attr-defined]
    twin.__annotations__ = {
        **{parameter.name: parameter.annotation for parameter in twin_signature.parameters.values()},
        "return": signature.return_annotation,
    }
    twin.__name__ = twin.__qualname__ = f"{handler.__name__}_of_agent"
    twin.__module__, twin.__doc__ = handler.__module__, handler.__doc__
    return twin
