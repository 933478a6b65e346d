"""Strict tool arguments for `hippocampus-mcp` (client/README.md, "MCP server").

The SDK builds each tool's argument model from the function's signature with pydantic's lax
defaults: `"yes"` passes as true, an unknown argument is dropped, and a string that parses as
JSON is parsed first (`"null"` becomes None). For a tool that erases data none of that is
acceptable, so every tool is a `StrictTool`: its model is the SDK's with `strict=True` and
`extra="forbid"` (its input schema then says `additionalProperties: false`), it validates the
arguments as they were sent, and a refusal is one sentence per argument naming the rule,
`confirm: must be true or false (got "yes")`, without pydantic's links.
"""

import json
from collections.abc import Callable, Collection
from typing import Any

from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import ErrorDetails

from .mcp_models import ID_PATTERN, NOT_BLANK

STRICT = {"strict": True, "extra": "forbid"}
MAX_SHOWN = 40  # a longer value is told by its type and length: the sentence stays short
TYPE_RULES = {
    "bool_type": "must be true or false",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "none_required": "must be null",
}
BOUND_RULES = {
    "greater_than_equal": ("at least", "ge"),
    "less_than_equal": ("at most", "le"),
    "greater_than": ("over", "gt"),
    "less_than": ("under", "lt"),
}
PATTERN_RULES = {
    ID_PATTERN: "must be an id: 1 to 128 letters, digits and . _ @ : -, starting with a letter or digit",
    NOT_BLANK: "must not be blank",
}


class StrictArguments(FuncMetadata):
    """The SDK's function metadata, without its JSON pre-parsing of string arguments."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return self.arg_model.model_validate(arguments_to_validate).model_dump_one_level()


class StrictTool(Tool):
    """A tool of the SDK whose arguments are strict; its refusals are one line an agent can act on."""

    @classmethod
    def of(
        cls,
        function: Callable[..., Any],
        title: str,
        description: str,
        annotations: ToolAnnotations,
        *,
        result: type[BaseModel] | None = None,
        hidden: Collection[str] = (),
    ) -> "StrictTool":
        """The tool of `function`. `result`: the model of what it returns, its output schema
        (default: the function's return annotation); `hidden`: parameters the tool does not take,
        which keep their defaults (one server's tool may take fewer than another's)."""
        tool = cls.from_function(
            function, title=title, description=description, annotations=annotations, structured_output=True
        )
        assert isinstance(tool, cls)
        lax = tool.fn_metadata
        base = lax.arg_model
        if set(hidden) & set(base.model_fields):
            taken: dict[str, Any] = {
                n: (f.annotation, f) for n, f in base.model_fields.items() if n not in hidden
            }
            base = create_model(base.__name__, __base__=ArgModelBase, **taken)
        model: type[ArgModelBase] = create_model(base.__name__, __base__=base, __cls_kwargs__=STRICT)
        output: dict[str, Any] = {
            "output_schema": lax.output_schema,
            "output_model": lax.output_model,
            "wrap_output": lax.wrap_output,
        }
        if result is not None:  # its schema is made from it (FuncMetadata)
            output = {"output_schema": None, "output_model": result, "wrap_output": False}
        tool.fn_metadata = StrictArguments(arg_model=model, **output)
        tool.parameters = model.model_json_schema(by_alias=True)
        return tool

    async def run(
        self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as error:
            refusal = error.__cause__
            if not isinstance(refusal, ValidationError):
                raise
            # `from refusal`: the SDK logs the names of the refused arguments (never their values).
            sentences = "; ".join(self._sentence(detail) for detail in refusal.errors(include_url=False))
            raise ToolError(f"Error executing tool {self.name}: invalid_input: {sentences}") from refusal

    def _sentence(self, detail: ErrorDetails) -> str:
        where = _location(detail["loc"])
        if detail["type"] == "extra_forbidden":
            accepted = ", ".join(self.parameters.get("properties", {}))
            return f"unknown argument: {where} ({self.name} takes {accepted})"
        if detail["type"] == "missing":
            return f"{where}: required"
        return f"{where}: {_rule(detail)} (got {_shown(detail['input'])})"


def _rule(detail: ErrorDetails) -> str:
    kind, limits = detail["type"], detail.get("ctx") or {}
    if kind in TYPE_RULES:
        return TYPE_RULES[kind]
    if kind == "string_pattern_mismatch":
        pattern = str(limits.get("pattern"))
        return PATTERN_RULES.get(pattern, f"must match {pattern}")
    if kind in ("string_too_short", "too_short"):
        noun = "characters" if kind == "string_too_short" else "items"
        return f"must have at least {limits.get('min_length')} {noun}"
    if kind in ("string_too_long", "too_long"):
        noun = "characters" if kind == "string_too_long" else "items"
        return f"must have at most {limits.get('max_length')} {noun}"
    if kind in BOUND_RULES:
        phrase, key = BOUND_RULES[kind]
        return f"must be {phrase} {limits.get(key)}"
    if kind == "literal_error":
        return f"must be {limits.get('expected')}"
    message = detail["msg"]
    return message[:1].lower() + message[1:]


def _location(loc: tuple[int | str, ...]) -> str:
    """`types[0]`, `metadata.key`: the argument, then where in it."""
    text = str(loc[0]) if loc else "arguments"
    for part in loc[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _shown(value: Any) -> str:
    """The refused value as JSON when short; else its size."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_SHOWN:
        return text
    if isinstance(value, str):
        return f"{len(value)} characters"
    if isinstance(value, list | dict):
        return f"{len(value)} entries"
    return type(value).__name__
