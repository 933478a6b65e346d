"""moto's DynamoDB parses a condition or filter expression once, not for every item it checks it on.

moto 5.2 parses an expression each time it meets one: a transaction of 100 conditional puts parses
its condition (the same text, the same values) twice per put, once to check the request and once
to apply it — over half of such a transaction's time. A parsed expression is a tree of operators
that evaluating does not change, so the same (expression, names, values) gets the same tree back,
and the request check gets the names and values the first parse found. An expression moto refuses
is refused again each time (an error is not kept). tests/integration/test_local_moto_conditions.py
shows moto still needs it.
"""

from collections.abc import Callable
from typing import Any

from moto.dynamodb import comparisons, responses
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models import table as table_models

from local_stack.moto_patching import replace

PARSED_KEPT = 1024
_PARAMETERS = ("expr", "names", "values")


class _Parsed:
    """A parser that has parsed: what moto reads of one (`parse()` and the names and values found)."""

    def __init__(self, parser: Any) -> None:
        self._tree = parser.parse()
        self._names = tuple(parser.expr_attr_names_found)
        self._values = tuple(parser.expr_attr_values_found)

    def parse(self) -> Any:
        return self._tree

    # A new list each time: moto adds to the list it is given (`names_used += ...`).
    @property
    def expr_attr_names_found(self) -> list[str]:
        return list(self._names)

    @property
    def expr_attr_values_found(self) -> list[str]:
        return list(self._values)


class _ParsedOnce:
    """The parse of each (expression, names, values), kept. DynamoDB requests run one at a time
    (`moto_endpoint.SerializedDynamoDB`), so the dict needs no lock."""

    def __init__(self, make_parser: Callable[..., Any]) -> None:
        self._make_parser = make_parser
        self._parsed: dict[str, _Parsed] = {}

    def parsed(self, expr: str | None, names: Any, values: Any) -> _Parsed:
        # repr tells apart all that the tree depends on: the text, the names, the values and their types.
        key = repr((expr, names, values))
        found = self._parsed.get(key)
        if found is None:
            found = _Parsed(self._make_parser(expr, names, values))
            if len(self._parsed) >= PARSED_KEPT:
                self._parsed.clear()
            self._parsed[key] = found
        return found

    def get_filter_expression(self, expr: str | None, names: Any, values: Any) -> Any:
        return self.parsed(expr, names, values).parse()


def fix_moto_condition_parsing() -> None:
    """Install once, wherever moto makes or runs the parser (each module imports it by name)."""
    once = _ParsedOnce(comparisons.create_condition_expression_parser)
    replace(responses, "create_condition_expression_parser", _PARAMETERS, lambda _: once.parsed, by=__name__)
    for module in (dynamodb_models, table_models):
        replace(
            module, "get_filter_expression", _PARAMETERS, lambda _: once.get_filter_expression, by=__name__
        )
